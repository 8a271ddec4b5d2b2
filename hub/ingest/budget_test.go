package ingest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// A backlog of large entries is read within the byte budget (hardening IV,
// 5: 4,096 pending entries of 65 KB took 1.45 GB): 200 entries of 60 KB
// (12 MB) reach the publish path in reads of at most 8 MiB each; an entry
// over the most one may hold (2 MiB, against 300 KB) comes without its
// text, TooLarge; every entry comes once, in order.
func TestIngest_ABacklogIsReadWithinItsByteBudget(t *testing.T) {
	const maxEntry = 300 << 10
	var mu sync.Mutex
	var reads []int64 // each publish call's bytes
	var order []string
	var tooLarge []int64
	ready := make(chan struct{})
	rdb, _ := startIngest(t, func(_ context.Context, entries []Entry) []Outcome {
		<-ready
		out := make([]Outcome, len(entries))
		var n int64
		mu.Lock()
		defer mu.Unlock()
		for i, e := range entries {
			n += int64(len(e.Body))
			order = append(order, e.ID)
			out[i] = Outcome{Result: Published}
			if e.TooLarge > 0 {
				tooLarge = append(tooLarge, e.TooLarge)
				out[i] = Outcome{Result: Dead, Code: "COMMON413"}
			}
		}
		reads = append(reads, n)
		return out
	}, maxEntry)
	body := strings.Repeat("x", 60<<10)
	var ids []string
	var cmds rueidis.Commands
	for i := range 202 {
		v := body
		if i == 50 || i == 150 {
			v = strings.Repeat("y", 2<<20)
		}
		cmds = append(cmds, rdb.B().Xadd().Key(hub.IngestKey(0)).Id("*").FieldValue().FieldValue("event", v).Build())
	}
	for _, r := range rdb.DoMulti(context.Background(), cmds...) {
		id, err := r.ToString()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	close(ready)
	waitDrained(t, rdb)
	mu.Lock()
	defer mu.Unlock()
	if len(reads) < 2 {
		t.Fatalf("%d reads for a 12 MB backlog: one read held it all", len(reads))
	}
	for i, n := range reads {
		if n > minReadBudget {
			t.Fatalf("read %d held %d bytes, over the %d budget", i, n, minReadBudget)
		}
	}
	if len(tooLarge) != 2 || tooLarge[0] != int64(len("event"))+2<<20 {
		t.Fatalf("too large: %v, want the two 2 MiB entries, sized", tooLarge)
	}
	if strings.Join(order, ",") != strings.Join(ids, ",") {
		t.Fatalf("entries came %d times, out of order or twice (%d added)", len(order), len(ids))
	}
}
