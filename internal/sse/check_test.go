package sse

import (
	"strings"
	"testing"
)

func frames(spec string) []Frame {
	var out []Frame
	for _, s := range strings.Fields(spec) {
		if s == "gap" {
			out = append(out, Frame{Event: "system.gap"})
			continue
		}
		out = append(out, Frame{Event: "comment.created", ID: s})
	}
	return out
}

func TestCheck_StrictGapRule(t *testing.T) {
	accepted := strings.Fields("1 2 3 4 5")
	for _, c := range []struct {
		got                              string
		ok                               bool
		delivered, withGap, silent, dups int
	}{
		{got: "1 2 3 4 5", ok: true, delivered: 5},
		{got: "1 2 gap 4 5", ok: true, delivered: 4, withGap: 1},
		{got: "gap 3 4 5", ok: true, delivered: 3, withGap: 2},
		// A gap excuses only the hole right after it.
		{got: "1 gap 2 4 5", delivered: 4, silent: 1},
		{got: "gap 1 2 3 5", delivered: 4, silent: 1},
		{got: "1 2 3 4 5 gap", ok: true, delivered: 5},
		{got: "1 2 3 4", delivered: 4, silent: 1},
		{got: "1 2 2 3 4 5", delivered: 5, dups: 1},
		{got: "1 3 2 4 5", delivered: 4, silent: 1},
		// A frame the hub stored for a publish that answered an error is ignored.
		{got: "1 2 9 3 4 5", ok: true, delivered: 5},
	} {
		r := Check(frames(c.got), accepted, Options{})
		if r.OK() != c.ok || r.Delivered != c.delivered || r.LostWithGap != c.withGap || r.LostSilently != c.silent || r.Duplicated != c.dups {
			t.Errorf("%q: %+v", c.got, r)
		}
	}
	r := Check([]Frame{{Event: "comment.created", ID: "1"}, {Event: "system.lagged"}}, []string{"1"}, Options{})
	if r.OK() || r.Unexpected != 1 {
		t.Errorf("system.lagged not reported: %+v", r)
	}
	if r := Check([]Frame{{Event: "comment.created", ID: "1"}, {Event: "system.lagged"}}, []string{"1"}, Options{AllowSystem: []string{"system.lagged"}}); !r.OK() {
		t.Errorf("an allowed system.lagged reported: %+v", r)
	}
}

func TestParse(t *testing.T) {
	in := "retry: 3000\n\n:keepalive\n\nevent: a\nid: 1-0\ndata: {\"x\":1}\n\nevent: b\ndata: {}\n\n"
	var got []Frame
	if err := Parse(strings.NewReader(in), func(f Frame) bool { got = append(got, f); return true }); err != nil {
		t.Fatal(err)
	}
	want := []Frame{{Retry: "3000"}, {Comment: "keepalive"}, {Event: "a", ID: "1-0", Data: `{"x":1}`}, {Event: "b", Data: "{}"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("frame %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
