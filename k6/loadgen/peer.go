package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// peerCentrifugo measures Centrifugo (v6) side by side with the hub, on the
// same shapes: each stream is a unidirectional SSE connection
// (/connection/uni_sse) whose token subscribes it to "room<N>" (the
// "channels" claim), and each event is one call of its HTTP API's publish
// to that channel, with the hub's event data. k6/loadgen/centrifugo.sh
// starts it as run.sh starts a hub.
const peerCentrifugo = "centrifugo"

// centrifugoStreamURL is the uni_sse address for user's stream of room.
func centrifugoStreamURL(base, secret string, user int64, room int) string {
	tok := signHS256(secret, fmt.Sprintf(`{"sub":"%d","exp":%d,"channels":["room%d"]}`, user, time.Now().Unix()+3600, room))
	return base + "/connection/uni_sse?cf_connect=" + url.QueryEscape(`{"token":"`+tok+`"}`)
}

// centrifugoEvent reads the t and seq of a publication's data from a
// uni_sse message; ok is false for anything else (connect, pings).
func centrifugoEvent(msg []byte) (t int64, seq uint32, ok bool) {
	var m struct {
		Pub *struct {
			Data struct {
				T   int64  `json:"t"`
				Seq uint32 `json:"seq"`
			} `json:"data"`
		} `json:"pub"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Pub == nil {
		return 0, 0, false
	}
	return m.Pub.Data.T, m.Pub.Data.Seq, true
}

// centrifugoPublish publishes each event's data to its room's channel, one
// API call each, and reports which were accepted.
func centrifugoPublish(client *http.Client, key, base string, events []event) []bool {
	ok := make([]bool, len(events))
	for i, ev := range events {
		body := fmt.Sprintf(`{"channel":"room%d","data":%s}`, ev.room, ev.data)
		req, _ := http.NewRequest(http.MethodPost, base+"/api/publish", strings.NewReader(body))
		req.Header.Set("X-API-Key", key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		reply, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ok[i] = resp.StatusCode == http.StatusOK && !bytes.Contains(reply, []byte(`"error"`))
	}
	return ok
}
