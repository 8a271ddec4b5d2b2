package ingest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"

	"roomhub/hub/publish"
	"roomhub/internal/testredis"
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
		cmds = append(cmds, rdb.B().Xadd().Key(PartitionKey(0)).Id("*").FieldValue().FieldValue("event", v).Build())
	}
	for i, r := range rdb.DoMulti(context.Background(), cmds...) {
		id, err := r.ToString()
		if err != nil {
			t.Fatal(err)
		}
		if i != 50 && i != 150 {
			want = append(want, IdempotencyKey(id))
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

// A backlog of entries too big to publish is read one entry at a time and
// every byte read counts toward the budget: a read copies at most one
// entry past it into the script, however large INGEST_BATCH (hardening V,
// 14: 48 × 8 MiB entries copied into one script took Redis from 409 MB to
// 1,196 MB and held it 4.6 s).
func TestIngestRead_CopiesAtMostOneEntryPastTheBudget(t *testing.T) {
	rdb := testredis.Client(t, testredis.Start(t).Addr())
	ctx := context.Background()
	key := PartitionKey(0)
	if err := rdb.Do(ctx, rdb.B().XgroupCreate().Key(key).Group(Group).Id("0").Mkstream().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("z", 2<<20)
	var ids []string
	for range 12 {
		id, err := rdb.Do(ctx, rdb.B().Xadd().Key(key).Id("*").FieldValue().FieldValue("event", big).Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	const budget = 8 << 20
	var seen []string
	for read := 0; len(seen) < len(ids); read++ {
		if read > 5 {
			t.Fatalf("after %d reads, %d of %d entries seen", read, len(seen), len(ids))
		}
		arr, err := readScript.Exec(ctx, rdb, []string{key}, []string{Group, "c", "64", strconv.Itoa(320 << 10), strconv.Itoa(budget)}).ToArray()
		if err != nil {
			t.Fatal(err)
		}
		got, err := entriesOf(arr[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || len(got)*(2<<20) > budget+2<<20 {
			t.Fatalf("read %d copied %d entries of 2 MiB, want at most one past the %d budget", read, len(got), budget)
		}
		for _, e := range got {
			if e.TooLarge == 0 || len(e.Body) != 0 {
				t.Fatalf("an entry too big came back with its text, or unsized: %+v", e.ID)
			}
			seen = append(seen, e.ID)
		}
		for _, e := range got {
			if err := rdb.Do(ctx, rdb.B().Xack().Key(key).Group(Group).Id(e.ID).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if strings.Join(seen, ",") != strings.Join(ids, ",") {
		t.Fatalf("entries seen %v, want each in order", seen)
	}
}
