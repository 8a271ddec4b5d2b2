package ingest

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/publish"
	"roomhub/internal/testbin"
	"roomhub/internal/testredis"
)

// An idle read takes the entries its blocking XREADGROUP woke on as they
// came (entryOf); a busy one, what lua/ingest_read.lua returns. Both class
// an entry alike: a body with its traceparent, an entry without an event
// field (its fields, as a JSON object), one over the most an entry may
// hold (its size alone, no text).
func TestWoken_EntriesAreClassedAsTheReadScriptClassesThem(t *testing.T) {
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	ctx := context.Background()
	key := hub.IngestKey(0)
	testredis.Do(t, rdb, "XGROUP", "CREATE", key, hub.IngestGroup, "0", "MKSTREAM")
	for _, fields := range [][]string{
		{"event", `{"roomId":1,"eventType":"comment.created"}`, "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		{"evnt", `{"roomId":1}`, "note", "a/b"},
		{"event", strings.Repeat("x", 200)},
		{"event", strings.Repeat("y", 145)}, // 150 bytes with its field name: the most
	} {
		testredis.Do(t, rdb, append([]string{"XADD", key, "*"}, fields...)...)
	}
	in := &Ingest{maxEntry: 150}
	x, err := rdb.Do(ctx, rdb.B().Xreadgroup().Group(hub.IngestGroup, consumer).Count(10).Streams().Key(key).Id(">").Build()).AsXReadSlices()
	if err != nil {
		t.Fatal(err)
	}
	var woken []Entry
	for _, e := range x[key] {
		woken = append(woken, in.entryOf(e))
	}
	arr, err := readScript.Exec(ctx, rdb, []string{key}, []string{hub.IngestGroup, consumer, "10", "150", strconv.Itoa(1 << 20)}).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	read, err := entriesOf(arr[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(woken) != 4 || len(read) != 4 {
		t.Fatalf("woken %d entries, read %d, want 4 each", len(woken), len(read))
	}
	for i := range woken {
		w, r := woken[i], read[i]
		if w.Missing { // the same fields, whatever the encoder's order
			var a, b map[string]string
			if json.Unmarshal(w.Body, &a) != nil || json.Unmarshal(r.Body, &b) != nil || !reflect.DeepEqual(a, b) {
				t.Errorf("entry %d: woken %s, read %s", i, w.Body, r.Body)
			}
			w.Body, r.Body = nil, nil
		}
		if len(w.Body) == 0 && len(r.Body) == 0 { // none: nil or empty
			w.Body, r.Body = nil, nil
		}
		if !reflect.DeepEqual(w, r) {
			t.Errorf("entry %d: woken %+v, read %+v", i, w, r)
		}
	}
	if woken[1].Missing != true || woken[2].TooLarge != 205 || len(woken[2].Body) != 0 || woken[0].traceparent == "" || woken[3].TooLarge != 0 {
		t.Errorf("woken entries classed wrong: %+v", woken)
	}
}

// A burst that lands while the consumer waits is taken in a few reads, not
// an entry a read: the streams' lengths, asked in the wait's own pipeline,
// say there is more behind the entry woken on.
func TestWoken_ABurstIsTakenInAFewReads(t *testing.T) {
	var mu sync.Mutex
	var runs int
	var got []string
	rdb, _ := startIngest(t, fakePublisher{maxData: 1 << 20, run: func(_ context.Context, bodies []publish.Body) []publish.Outcome {
		mu.Lock()
		defer mu.Unlock()
		runs++
		out := make([]publish.Outcome, len(bodies))
		for _, b := range bodies {
			got = append(got, string(b.Raw))
		}
		return out
	}})
	ctx := context.Background()
	testbin.Eventually(t, 30*time.Second, "the consumer waiting (its XREADGROUP listed as blocked)", func() bool {
		list, _ := rdb.Do(ctx, rdb.B().ClientList().Build()).ToString()
		return strings.Contains(list, "flags=b") && strings.Contains(list, "cmd=xreadgroup")
	})
	const n = 600
	cmds := rueidis.Commands{rdb.B().Multi().Build()}
	for i := range n {
		cmds = append(cmds, rdb.B().Xadd().Key(hub.IngestKey(0)).Id("*").FieldValue().FieldValue("event", strconv.Itoa(i)).Build())
	}
	cmds = append(cmds, rdb.B().Exec().Build())
	dc, cancel := rdb.Dedicate()
	defer cancel()
	for _, r := range dc.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	waitDrained(t, rdb)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != n || got[0] != "0" || got[n-1] != strconv.Itoa(n-1) {
		t.Fatalf("published %d entries (first %q), want %d in order", len(got), got[:min(len(got), 1)], n)
	}
	// One woken on, then INGEST_BATCH (256) a read: 4 reads.
	if runs > 6 {
		t.Errorf("%d entries in one burst took %d reads, want a few", n, runs)
	}
}

// After Redis lost its scripts (SCRIPT FLUSH), the consumer goes on: the
// held finish and the read are sent again with their source.
func TestWoken_ReadsOnAfterRedisLostItsScripts(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	rdb, _ := startIngest(t, fakePublisher{maxData: 1 << 20, run: func(_ context.Context, bodies []publish.Body) []publish.Outcome {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bodies {
			seen[string(b.Raw)] = true
		}
		return make([]publish.Outcome, len(bodies))
	}})
	ctx := context.Background()
	add := func(body string) {
		if err := rdb.Do(ctx, rdb.B().Xadd().Key(hub.IngestKey(0)).Id("*").FieldValue().FieldValue("event", body).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		add(strconv.Itoa(i))
	}
	waitDrained(t, rdb)
	testredis.Do(t, rdb, "SCRIPT", "FLUSH")
	for i := 3; i < 6; i++ {
		add(strconv.Itoa(i))
	}
	waitDrained(t, rdb)
	mu.Lock()
	defer mu.Unlock()
	for i := range 6 {
		if !seen[strconv.Itoa(i)] {
			t.Errorf("entry %d never published (published: %v)", i, seen)
		}
	}
}
