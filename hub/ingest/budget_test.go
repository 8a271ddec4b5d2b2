package ingest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/publish"
)

// A backlog of large entries is read within the byte budget (hardening IV,
// 5: 4,096 pending entries of 65 KB took 1.45 GB): 200 entries of 60 KB
// (12 MB) reach the publish path in reads of at most 8 MiB each; an entry
// over the most one may hold (2 MiB, against 300 KB) is dead, its size
// said, its text never read; every other entry comes once, in order.
func TestIngest_ABacklogIsReadWithinItsByteBudget(t *testing.T) {
	const maxData = 300<<10 - publish.BodyHeadway // a body may hold 300 KiB
	var mu sync.Mutex
	var reads []int64 // each publish call's bytes
	var order []string
	ready := make(chan struct{})
	rdb, in := startIngest(t, fakePublisher{maxData: maxData, run: func(_ context.Context, bodies []publish.Body) []publish.Outcome {
		<-ready
		var n int64
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bodies {
			n += int64(len(b.Raw))
			order = append(order, b.DefaultKey)
		}
		reads = append(reads, n)
		return make([]publish.Outcome, len(bodies))
	}})
	body := strings.Repeat("x", 60<<10)
	var want []string
	var cmds rueidis.Commands
	for i := range 202 {
		v := body
		if i == 50 || i == 150 {
			v = strings.Repeat("y", 2<<20)
		}
		cmds = append(cmds, rdb.B().Xadd().Key(hub.IngestKey(0)).Id("*").FieldValue().FieldValue("event", v).Build())
	}
	for i, r := range rdb.DoMulti(context.Background(), cmds...) {
		id, err := r.ToString()
		if err != nil {
			t.Fatal(err)
		}
		if i != 50 && i != 150 {
			want = append(want, hub.IngestIdempotencyKey(id))
		}
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
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("entries came %d times, out of order or twice (%d added)", len(order), len(want))
	}
	dead, _, err := in.Dead(context.Background(), 0, nil, 10)
	size := fmt.Sprintf("entry's %d bytes", len("event")+2<<20)
	if err != nil || len(dead) != 2 || dead[0].Code != "COMMON413" || dead[0].Event != "" || !strings.Contains(dead[1].Message, size) {
		t.Fatalf("dead %+v, %v: want the two 2 MiB entries, 413, sized, without their text", dead, err)
	}
}
