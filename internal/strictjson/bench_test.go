package strictjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDecodePublish decodes a publish body of 1,000 recipients: the
// name check costs a fraction of the decode (lists of scalars are skipped
// whole).
func BenchmarkDecodePublish(b *testing.B) {
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = fmt.Sprint(1000000 + i)
	}
	body := []byte(`{"roomId":42,"eventType":"comment.created","data":{"title":"Ann replied","text":"Looks good"},"recipientIds":[` + strings.Join(ids, ",") + `],"tags":["a","b"]}`)
	type req struct {
		RoomID       int64           `json:"roomId"`
		EventType    string          `json:"eventType"`
		Data         json.RawMessage `json:"data"`
		RecipientIDs []int64         `json:"recipientIds"`
		Tags         []string        `json:"tags"`
	}
	for b.Loop() {
		var r req
		if err := Decode(body, &r); err != nil {
			b.Fatal(err)
		}
	}
}
