package inbox

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzFilter: a filter from the network (a bulk body's, or the list's
// query) either fails Check or becomes arguments the Lua scripts read
// unambiguously: comma lists whose entries hold no comma, nothing empty.
func FuzzFilter(f *testing.F) {
	for _, s := range []string{`{}`, `{"state":"unread","tags":["a","b.c"],"severity":["high"],"eventType":"comment.created","roomId":42}`,
		`{"tags":["a,b"]}`, `{"state":"x"}`, `{"roomId":-1}`, `{"tags":[""]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var flt Filter
		if json.Unmarshal([]byte(s), &flt) != nil || flt.Check() != nil {
			return
		}
		args := flt.args()
		if len(args) != 5 || args[0] == "" {
			t.Fatalf("%q → %q", s, args)
		}
		for i, list := range [][]string{flt.Tags, flt.Severities} {
			if strings.Join(list, ",") != args[1+i] {
				t.Fatalf("%q: list %d does not round-trip: %q", s, i, args[1+i])
			}
			for _, v := range list {
				if v == "" || strings.ContainsAny(v, ",\t\n\"") {
					t.Fatalf("%q: %q passed Check", s, v)
				}
			}
		}
	})
}

func TestFilter_Check(t *testing.T) {
	ok := Filter{Tags: []string{"a"}, Severities: []string{"high"}}
	if err := ok.Check(); err != nil || ok.State != StateVisible {
		t.Fatalf("%+v: %v", ok, err)
	}
	for _, f := range []Filter{{State: "gone"}, {Tags: []string{"A"}}, {Tags: []string{"a,b"}}, {Severities: []string{"urgent"}},
		{EventType: "Bad"}, {RoomID: -1}, {Tags: make([]string, 33)}} {
		if err := f.Check(); err == nil {
			t.Errorf("%+v passed", f)
		}
	}
}
