package publish

import (
	"encoding/json"
	"errors"
	"testing"
)

// A body is decoded as DESIGN says, or refused with the code of its
// fault: COMMON400, or NOTIF4001 for a missing or bad event type.
func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		body string
		code string // "" = ok
	}{
		{`{"roomId":42,"eventType":"comment.created","data":{"a":1},"publisherId":1,"idempotencyKey":"k","recipientIds":[1,2]}`, ""},
		{`{"roomId":42,"eventType":"comment.created","data":{}}`, ""},
		{`{"roomId":42,"eventType":"comment.created","data":{}} {}`, "COMMON400"},
		{`not json`, "COMMON400"},
		{`[]`, "COMMON400"},
		{`{"roomId":"42","eventType":"comment.created","data":{}}`, "COMMON400"},
		{`{"roomId":0,"eventType":"comment.created","data":{}}`, "COMMON400"},
		{`{"roomId":-1,"eventType":"comment.created","data":{}}`, "COMMON400"},
		{`{"roomId":1.5,"eventType":"comment.created","data":{}}`, "COMMON400"},
		{`{"roomId":99999999999999999999,"eventType":"comment.created","data":{}}`, "COMMON400"},
		{`{"eventType":"comment.created","data":{}}`, "COMMON400"},
		{`{"roomId":42,"data":{}}`, "NOTIF4001"},
		{`{"roomId":42,"eventType":"","data":{}}`, "NOTIF4001"},
		{`{"roomId":42,"eventType":5,"data":{}}`, "NOTIF4001"},
		{`{"roomId":42,"eventType":"comment.created"}`, "COMMON400"},
		{`{"roomId":42,"eventType":"comment.created","data":null}`, "COMMON400"},
		{`{"roomId":42,"eventType":"comment.created","data":[1]}`, "COMMON400"},
		{`{"roomId":42,"eventType":"comment.created","data":"x"}`, "COMMON400"},
		{`{"roomId":42,"eventType":"comment.created","data":{},"publisherId":0}`, "COMMON400"},
		{`{"roomId":42,"eventType":"comment.created","data":{},"recipientIds":"1"}`, "COMMON400"},
	} {
		_, err := Decode([]byte(tc.body), 0)
		var r *Refusal
		switch {
		case tc.code == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.body, err)
		case tc.code != "" && (!errors.As(err, &r) || r.Code != tc.code):
			t.Errorf("%s: err = %v, want %s", tc.body, err, tc.code)
		}
	}
}

// Whatever the body, Decode refuses it with a 400 code of DESIGN's table,
// or returns a request the core can publish.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"roomId":42,"eventType":"comment.created","data":{"a":1},"publisherId":1,"idempotencyKey":"k"}`,
		`{"roomId":1,"eventType":"x","data":{}}`, `{}`, `[]`, `{"data":{"a":[1,{"b":null}]}}`, `null`,
		`{"roomId":1,"eventType":"x","data":{},"recipientIds":[1],"dedupeKey":"k","dedupeWindowSecs":60,"delivery":{"push":{"afterSecs":1,"unless":"seen"}}}`,
		`{"roomId":1,"eventType":"x","data":{},"delivery":{"push":null}}`, `{"roomId":1,"eventType":"x","data":{},"delivery":[]}`,
		`{"roomId":1,"eventType":"x","data":{},"recipients":[1]}`, `{"roomId":1,"eventType":"x","data":{},"recipientIDs":[1]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := Decode(body, 0)
		if err != nil {
			var r *Refusal
			if !errors.As(err, &r) || (r.Code != "COMMON400" && r.Code != "NOTIF4001") {
				t.Fatalf("error %v is not a refusal of a bad body", err)
			}
			return
		}
		if req.Room <= 0 || req.EventType == "" || len(req.Data) == 0 || req.Data[0] != '{' {
			t.Fatalf("accepted an invalid request: %+v", req)
		}
		if !json.Valid(req.Data) {
			t.Fatalf("accepted invalid data %q", req.Data)
		}
	})
}
