package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/internal/sse"
	"roomhub/internal/testbin"
	"roomhub/internal/testredis"
)

// ingestRooms are the test's rooms: with INGEST_PARTITIONS=4, one per
// partition (room mod 4).
var ingestRooms = []int{4, 5, 6, 7}

// recipient is the user a room's events notify.
func recipient(room int) int { return 1000 + room }

// A backend fills the ingest streams while two instances consume them.
// Instance A is SIGKILLed while it holds entries it has published and not
// acknowledged; B takes A's partitions over, and Redis (with AOF) is then
// restarted under B. Every entry is published once: once in its room's
// history, in its order; once in its recipient's inbox; once, in order, on
// a stream that was open on B throughout.
func TestBinary_IngestExactlyOnceThroughSIGKILLAndARedisRestart(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	rs := testredis.StartWith(t, "--appendonly", "yes", "--appendfsync", "always")
	run := ingestRun{t: t, rdb: testredis.Client(t, rs.Addr()), perRoom: 600}
	env := []string{"REDIS_URL=" + rs.URL(), "LOCK_TTL_SECS=2", "INGEST_PARTITIONS=4", "INGEST_BATCH=50"}

	a, procA, logsA := testbin.Start(t, bin, env...)
	testbin.WaitHealth(t, a, 200, 15*time.Second)
	testbin.Eventually(t, 20*time.Second, "A to hold the four partitions", func() bool {
		h := run.holders()
		return len(h) == 1 && len(firstOf(h)) == 4
	})
	var idA string
	for id := range run.holders() {
		idA = id
	}
	b, _, logsB := testbin.Start(t, bin, env...)
	testbin.WaitHealth(t, b, 200, 15*time.Second)
	testbin.Eventually(t, 20*time.Second, "A and B to hold two partitions each", func() bool {
		h := run.holders()
		return len(h) == 2 && len(h[idA]) == 2
	})
	partsA := run.holders()[idA]

	browsers := run.openStreams(testbin.DevToken(t, b, 1), b) // open before the first entry
	run.fill()

	// Kill A while it holds entries it has published and not acknowledged.
	testbin.Eventually(t, 60*time.Second, "A to hold a published, unacknowledged entry", func() bool {
		return run.publishedNotAcked(partsA) > 0
	})
	if err := procA.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-procA.Exited()
	killed := time.Now()
	unacked := run.publishedNotAcked(partsA)
	if unacked <= 0 {
		t.Fatalf("the kill left no entry published and unacknowledged: the test proves nothing; A's log:\n%s", logsA)
	}
	t.Logf("A killed with %d entries published and not acknowledged", unacked)

	// B takes A's partitions over within LOCK_TTL_SECS + 5 s (the wait
	// allows four times that, for a busy machine; the time is logged).
	testbin.Eventually(t, 4*(2+5)*time.Second, "B to take A's partitions over", func() bool {
		h := run.holders()
		return len(h) == 1 && len(firstOf(h)) == 4
	})
	t.Logf("B holds every partition %v after the kill", time.Since(killed).Round(100*time.Millisecond))

	// Redis restarts under B (AOF keeps everything); B goes on.
	rs.Restart()
	testbin.Eventually(t, 120*time.Second, "every entry to be finished", func() bool {
		for p := range 4 {
			if run.xlen(p) != 0 {
				return false
			}
		}
		return true
	})
	run.checkExactlyOnce(browsers)
	if t.Failed() {
		t.Logf("B's log:\n%s", logsB)
	}
}

// ingestRun is what the steps of the ingest kill test share: its Redis and
// how many entries each room gets.
type ingestRun struct {
	t       *testing.T
	rdb     rueidis.Client
	perRoom int
}

// holders is which instance holds which partitions' leases.
func (r ingestRun) holders() map[string][]int {
	m := map[string][]int{}
	for p := range 4 {
		if id, err := r.rdb.Do(r.t.Context(), r.rdb.B().Get().Key(fmt.Sprintf("lock:ingest:{%d}", p)).Build()).ToString(); err == nil {
			m[id] = append(m[id], p)
		}
	}
	return m
}

// xlen is what partition p has left to do.
func (r ingestRun) xlen(p int) int64 {
	n, _ := r.rdb.Do(r.t.Context(), r.rdb.B().Xlen().Key(fmt.Sprintf("ingest:{%d}", p)).Build()).AsInt64()
	return n
}

// openStreams opens a stream per room on the hub at base as token's user.
func (r ingestRun) openStreams(token, base string) map[int]*sse.Browser {
	browsers := map[int]*sse.Browser{}
	for _, room := range ingestRooms {
		br := sse.StartBrowser(fmt.Sprintf("%s/api/v1/rooms/%d/stream", base, room), sse.BrowserOptions{
			Header: func() http.Header { return http.Header{"Authorization": {"Bearer " + token}} }})
		r.t.Cleanup(func() { br.Stop() })
		select {
		case <-br.Connected():
		case <-time.After(15 * time.Second):
			r.t.Fatal("a stream did not open")
		}
		browsers[room] = br
	}
	return browsers
}

// fill is the backend: every entry with a recipient, so each publish also
// writes an inbox (a slow publish: A is killed in the middle of one).
func (r ingestRun) fill() {
	var cmds rueidis.Commands
	for n := range r.perRoom {
		for _, room := range ingestRooms {
			body := fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"n":%d},"recipientIds":[%d]}`, room, n, recipient(room))
			cmds = append(cmds, r.rdb.B().Xadd().Key(fmt.Sprintf("ingest:{%d}", room%4)).Maxlen().Almost().Threshold("1000000").
				Id("*").FieldValue().FieldValue("event", body).Build())
		}
	}
	for _, res := range r.rdb.DoMulti(r.t.Context(), cmds...) {
		if err := res.Error(); err != nil {
			r.t.Fatal(err)
		}
	}
}

// publishedNotAcked is how many entries of parts are published and not
// acknowledged: their rooms' histories hold more of their events than the
// partitions finished (a stream keeps what is not finished). The stream is
// read after the history: never more than the truth.
func (r ingestRun) publishedNotAcked(parts []int) (n int) {
	for _, p := range parts {
		room := 4 + p // ingestRooms: room mod 4 is its partition
		n += len(r.historyNs(room)) - (r.perRoom - int(r.xlen(p)))
	}
	return n
}

// historyNs is data.n of each comment in room's history, in order.
func (r ingestRun) historyNs(room int) []int {
	entries, err := r.rdb.Do(r.t.Context(), r.rdb.B().Xrange().Key(fmt.Sprintf("room:events:{%d}", room)).Start("-").End("+").Build()).AsXRange()
	if err != nil {
		r.t.Fatal(err)
	}
	var hist []int
	for _, e := range entries {
		if e.FieldValues["type"] == "comment.created" {
			hist = append(hist, dataN(r.t, e.FieldValues["data"]))
		}
	}
	return hist
}

// checkExactlyOnce: no dead entry; each entry once in its room's history,
// in order; once in its recipient's inbox; once, in order, on its stream.
func (r ingestRun) checkExactlyOnce(browsers map[int]*sse.Browser) {
	t := r.t
	for p := range 4 {
		if n, _ := r.rdb.Do(t.Context(), r.rdb.B().Xlen().Key(fmt.Sprintf("ingest:dead:{%d}", p)).Build()).AsInt64(); n != 0 {
			t.Errorf("partition %d has %d dead entries: an entry that failed for want of Redis must be retried, not dead", p, n)
		}
	}
	for _, room := range ingestRooms {
		checkSequence(t, fmt.Sprintf("room %d's history", room), r.historyNs(room), r.perRoom)

		u := recipient(room)
		items, _ := r.rdb.Do(t.Context(), r.rdb.B().Hlen().Key(fmt.Sprintf("inbox:{%d}", u)).Build()).AsInt64()
		unread, _ := r.rdb.Do(t.Context(), r.rdb.B().Get().Key(fmt.Sprintf("unread_count:{%d}", u)).Build()).AsInt64()
		if items != int64(r.perRoom) || unread != int64(r.perRoom) {
			t.Errorf("user %d has %d inbox items and an unread count of %d, want %d each", u, items, unread, r.perRoom)
		}

		br := browsers[room]
		testbin.Eventually(t, 30*time.Second, "the stream to catch up", func() bool { return len(br.IDs("comment.created")) >= r.perRoom })
		var seen []int
		for _, f := range br.Stop() {
			if f.Event == "comment.created" {
				seen = append(seen, dataN(t, f.Data))
			}
		}
		checkSequence(t, fmt.Sprintf("room %d's stream", room), seen, r.perRoom)
	}
}

func firstOf(m map[string][]int) []int {
	for _, v := range m {
		return v
	}
	return nil
}

// dataN reads "n" from an event's data (history's data field, or a
// stream message's JSON, which carries data).
func dataN(t *testing.T, s string) int {
	t.Helper()
	var v struct {
		N    *int `json:"n"`
		Data *struct {
			N int `json:"n"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("event data %q: %v", s, err)
	}
	switch {
	case v.N != nil:
		return *v.N
	case v.Data != nil:
		return v.Data.N
	}
	t.Fatalf("event data %q has no n", s)
	return 0
}

// checkSequence fails unless got is exactly 0, 1, … want-1.
func checkSequence(t *testing.T, what string, got []int, want int) {
	t.Helper()
	for i, n := range got {
		if n != i {
			t.Errorf("%s: position %d holds event %d (%d events): a duplicate, a loss or a reorder; from there: %s",
				what, i, n, len(got), strings.Trim(strconv.Quote(fmt.Sprint(got[i:min(i+10, len(got))])), `"`))
			return
		}
	}
	if len(got) != want {
		t.Errorf("%s: %d events, want %d", what, len(got), want)
	}
}

// The embedded dev mode (`go run .`) consumes the ingest streams too: an
// entry added to the embedded Redis (its address is logged) is published,
// and a refused one is listed dead.
func TestBinary_DevModeConsumesIngest(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	a, _, logs := testbin.Start(t, bin)
	testbin.WaitHealth(t, a, 200, 15*time.Second)
	var addr string
	for _, line := range strings.Split(logs.String(), "\n") {
		var l struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, "dev mode") {
			addr = l.Addr
		}
	}
	if addr == "" {
		t.Fatalf("no embedded Redis address in the log:\n%s", logs)
	}
	rdb := testredis.Client(t, addr)
	for _, body := range []string{`{"roomId":42,"eventType":"comment.created","data":{"n":0},"recipientIds":[3]}`, `{"roomId":42}`,
		`{"roomId":42,"eventType":"comment.created","data":{"n":1}}`} {
		if err := rdb.Do(t.Context(), rdb.B().Xadd().Key("ingest:{10}").Id("*").FieldValue().FieldValue("event", body).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	token := testbin.DevToken(t, a, 3)
	get := func(path string, hdr http.Header, out any) {
		req, _ := http.NewRequest(http.MethodGet, a+path, nil)
		req.Header = hdr
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	var events struct {
		Result struct {
			Events []struct{ Data json.RawMessage }
		}
	}
	testbin.Eventually(t, 15*time.Second, "both events in room 42's history", func() bool {
		get("/api/v1/rooms/42/events?since=0", http.Header{"Authorization": {"Bearer " + token}}, &events)
		return len(events.Result.Events) >= 2
	})
	if got := []int{dataN(t, string(events.Result.Events[0].Data)), dataN(t, string(events.Result.Events[1].Data))}; len(events.Result.Events) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("room 42's history: %+v", events.Result.Events)
	}
	var counts struct{ Result struct{ Unread int } }
	get("/api/v1/notifications/counts", http.Header{"Authorization": {"Bearer " + token}}, &counts)
	var dead struct {
		Result struct {
			Entries []struct {
				Partition int
				Code      string
			}
		}
	}
	get("/api/v1/internal/ingest/dead", http.Header{"X-Internal-Key": {"local_dev_internal_key"}}, &dead)
	if counts.Result.Unread != 1 || len(dead.Result.Entries) != 1 || dead.Result.Entries[0].Partition != 10 || dead.Result.Entries[0].Code != "NOTIF4001" {
		t.Fatalf("user 3's unread: %d; dead: %+v", counts.Result.Unread, dead.Result.Entries)
	}
}
