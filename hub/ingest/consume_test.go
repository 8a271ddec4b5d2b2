package ingest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/ingest"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// Entries the HTTP route would refuse are dead with the code and message
// the route answers for that body, and do not hold up the entries behind
// them; the rest are published once, in their partition's order, with
// their recipients; the dead listing pages through every partition.
func TestIngest_PublishesInOrderAndKeepsWhatTheRouteWouldRefuse(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	th := testhub.StartFull(t, rs.Addr(), testhub.WithIngest(2), nil, testhub.Extras{MaxData: 1024})
	rdb := testredis.Client(t, rs.Addr())
	refused := []string{
		`not json`,
		`{"roomId":2,"eventType":"no.such.type","data":{}}`,
		`{"roomId":2,"eventType":"comment.created","data":{},"recipientIDz":[1]}`,
		`{"roomId":2,"eventType":"comment.created","data":{"big":"` + strings.Repeat("x", 2000) + `"}}`,
		`{"roomId":2,"eventType":"comment.created","data":{},"severity":"high"}`,
		`{"roomId":-1,"eventType":"comment.created","data":{}}`,
	}
	huge := fillPartitions(t, rdb, refused)
	testhub.WaitIngested(t, rdb, 2)
	publishedOnceInOrder(t, th)
	all := deadAsTheRouteAnswers(t, th, len(refused)+2, huge)
	deadPages(t, th, all, len(refused)/2+2)
	if got := testhub.MetricValue(t, th, `ingest_entries_total{result="dead"}`); got != fmt.Sprint(len(refused)+2) {
		t.Errorf("ingest_entries_total{dead} = %s", got)
	}
	if got := testhub.MetricValue(t, th, `ingest_entries_total{result="published"}`); got != "30" {
		t.Errorf("ingest_entries_total{published} = %s, want 30", got)
	}
	_, env := th.Do(t, http.MethodGet, "/health", nil, "")
	var health struct {
		IngestLag *int64
		Ingest    string
	}
	testhub.Remarshal(t, env.Result, &health)
	if health.IngestLag == nil || health.Ingest != "ok" {
		t.Errorf("/health says ingest %q, lag %v", health.Ingest, health.IngestLag)
	}
}

// fillPartitions adds 30 good entries to rooms 2, 3 and 4 (half with a
// recipient), the refused ones between them, an entry without an event
// field and a huge one; it returns the huge one's body.
func fillPartitions(t *testing.T, rdb rueidis.Client, refused []string) string {
	// Room 2 and room 4 share partition 0; room 3 is in partition 1. Each
	// good entry carries its place; the refused ones lie between them.
	for i := range 30 {
		room := []int{2, 3, 4}[i%3]
		body := fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"n":%d},"recipientIds":[%d]}`, room, i, 900+room)
		if i%2 == 0 {
			body = fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"n":%d}}`, room, i)
		}
		testhub.XAdd(t, rdb, room%2, "event", body)
		if i < len(refused) {
			testhub.XAdd(t, rdb, i%2, "event", refused[i])
		}
	}
	testhub.XAdd(t, rdb, 1, "not-event", "{}")
	huge := `{"roomId":3,"eventType":"comment.created","data":{"x":"` + strings.Repeat("y", 300<<10) + `"}}`
	testhub.XAdd(t, rdb, 1, "event", huge)
	return huge
}

// publishedOnceInOrder: the good entries are published once each, in
// order, with their recipients.
func publishedOnceInOrder(t *testing.T, th *testhub.Hub) {
	// Published once each, in order.
	for _, room := range []int{2, 3, 4} {
		got := th.HistoryNs(t, int64(room))
		var want []int
		for i := room - 2; i < 30; i += 3 {
			want = append(want, i)
		}
		if !slices.Equal(got, want) {
			t.Errorf("room %d's history holds %v, want %v", room, got, want)
		}
		if c := th.CountsOf(t, int64(900+room)).Unread; c != int64(len(want)/2) {
			t.Errorf("user %d has %d unread, want %d", 900+room, c, len(want)/2)
		}
	}
}

// deadAsTheRouteAnswers: each of the n dead entries is answered as the
// route answers its body (the huge one with its size, the one without an
// event field with its fields); it returns the whole listing.
func deadAsTheRouteAnswers(t *testing.T, th *testhub.Hub, n int, huge string) testhub.DeadPage {
	// Each dead entry answered as the route answers its body.
	_, all := th.IngestDead(t, "")
	if len(all.Entries) != n || all.NextAfter != nil {
		t.Fatalf("dead: %d entries (next %v), want %d", len(all.Entries), all.NextAfter, n)
	}
	for _, d := range all.Entries {
		if strings.Contains(d.Message, "its text is not kept") { // the huge one: never read, its size said
			if d.Code != "COMMON413" || d.Event != "" || !strings.Contains(d.Message, fmt.Sprintf("entry's %d bytes", len("event")+len(huge))) {
				t.Errorf("the huge entry is dead as %s %q with %d bytes kept", d.Code, d.Message, len(d.Event))
			}
			continue
		}
		if strings.Contains(d.Message, "no event field") { // its fields kept (issue 43, 8)
			if d.Code != "COMMON400" || d.Partition != 1 || d.Event != `{"not-event":"{}"}` {
				t.Errorf("the entry without an event field is dead as %+v", d)
			}
			continue
		}
		code, env := th.PublishRaw(t, d.Event)
		if code < 400 || code >= 500 || env.Code != d.Code || env.Message != d.Message {
			t.Errorf("dead %q as %s %q; the route answers %d %s %q", d.Event, d.Code, d.Message, code, env.Code, env.Message)
		}
		if d.At == "" || d.EntryID == "" {
			t.Errorf("dead entry without its id or time: %+v", d)
		}
	}
	return all
}

// deadPages: paging one at a time lists each once, in partition then entry
// order; a partition lists its own (inPartition1 of them); bad queries are
// 400s.
func deadPages(t *testing.T, th *testhub.Hub, all testhub.DeadPage, inPartition1 int) {
	// Paging one at a time lists each once, in partition then entry order.
	var paged []ingest.DeadEntry
	query := "limit=1"
	for range 20 {
		code, page := th.IngestDead(t, query)
		if code != 200 {
			t.Fatalf("dead page: %d", code)
		}
		paged = append(paged, page.Entries...)
		if page.NextAfter == nil {
			break
		}
		query = "limit=1&after=" + url.QueryEscape(*page.NextAfter)
	}
	if !slices.EqualFunc(paged, all.Entries, func(a, b ingest.DeadEntry) bool { return a == b }) {
		t.Errorf("paged by one: %+v\nwhole: %+v", paged, all.Entries)
	}
	_, one := th.IngestDead(t, "partition=1")
	for _, d := range one.Entries {
		if d.Partition != 1 {
			t.Errorf("partition=1 lists %+v", d)
		}
	}
	if len(one.Entries) != inPartition1 {
		t.Errorf("partition=1 lists %d entries, want %d", len(one.Entries), inPartition1)
	}
	for _, q := range []string{"partition=2", "partition=x", "after=nope", "after=5:1-0", "limit=0"} {
		if code, _ := th.IngestDead(t, q); code != 400 {
			t.Errorf("dead?%s: %d, want 400", q, code)
		}
	}
}

// An entry read twice (its holder died between publish and ack) is
// published once: the second read finds its idempotency key.
func TestIngest_AnEntryReadTwicePublishesOnce(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	ctx := context.Background()
	// A holder that died: it read two entries, published the first (as the
	// hub would, under ingest:<entry id>) and acknowledged neither.
	testredis.Do(t, rdb, "XGROUP", "CREATE", ingest.PartitionKey(0), ingest.Group, "0", "MKSTREAM")
	first := testhub.XAdd(t, rdb, 0, "event", `{"roomId":8,"eventType":"comment.created","data":{"n":0},"recipientIds":[5]}`)
	testhub.XAdd(t, rdb, 0, "event", `{"roomId":8,"eventType":"comment.created","data":{"n":1},"recipientIds":[5]}`)
	testredis.Do(t, rdb, "XREADGROUP", "GROUP", ingest.Group, "roomhub", "COUNT", "10", "STREAMS", ingest.PartitionKey(0), ">")

	dead := testhub.Start(t, rs.Addr(), nil) // consumes nothing: it publishes as the dead holder did
	code, env := dead.PublishRaw(t, `{"roomId":8,"eventType":"comment.created","data":{"n":0},"recipientIds":[5],"idempotencyKey":"ingest:`+first+`"}`)
	if code != 200 {
		t.Fatalf("the dead holder's publish: %d %+v", code, env)
	}
	th := testhub.StartWith(t, rs.Addr(), testhub.WithIngest(1), nil)
	testhub.WaitIngested(t, rdb, 1)
	code, env = th.Get(t, "/api/v1/rooms/8/events?since=0", th.Token(t, 1))
	var page hub.EventsPage
	testhub.Remarshal(t, env.Result, &page)
	if code != 200 || len(page.Events) != 2 {
		t.Fatalf("room 8 holds %d events, want 2 (each once)", len(page.Events))
	}
	if c := th.CountsOf(t, 5).Unread; c != 2 {
		t.Errorf("user 5 has %d unread, want 2", c)
	}
	if got := testhub.MetricValue(t, th, `ingest_entries_total{result="duplicate"}`); got != "1" {
		t.Errorf("ingest_entries_total{duplicate} = %s, want 1", got)
	}
	if n, _ := rdb.Do(ctx, rdb.B().Xlen().Key(ingest.PartitionKey(0)).Build()).AsInt64(); n != 0 {
		t.Errorf("ingest:{0} keeps %d entries", n)
	}
}

// Two instances share the partitions evenly; when one closes, the other
// takes its partitions over and consumes them.
func TestIngest_InstancesShareThePartitionsAndTakeOver(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	a := testhub.StartWith(t, rs.Addr(), testhub.WithIngest(4), nil)
	b := testhub.StartWith(t, rs.Addr(), testhub.WithIngest(4), nil)
	testhub.Eventually(t, 20*time.Second, "two partitions each", func() bool {
		return len(a.Ingest.Owned()) == 2 && len(b.Ingest.Owned()) == 2
	})
	o := append(a.Ingest.Owned(), b.Ingest.Owned()...)
	if slices.Sort(o); !slices.Equal(o, []int{0, 1, 2, 3}) {
		t.Fatalf("owned between them: %v", o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Hub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for p := range 4 {
		testhub.XAdd(t, rdb, p, "event", fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{}}`, 20+p))
	}
	testhub.Eventually(t, 20*time.Second, "B to hold all four", func() bool { return len(b.Ingest.Owned()) == 4 })
	testhub.WaitIngested(t, rdb, 4)
}

// On a 3-master cluster the partitions lie on several masters and are
// consumed there, each room's entries in order.
func TestCluster_IngestConsumesEveryMaster(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	th := testhub.StartWith(t, cl.Addrs()[0], func(c *testhub.Configs) {
		c.RedisURL = "redis+cluster://" + strings.Join(cl.Addrs(), ",")
		testhub.WithIngest(8)(c)
	}, nil)
	rdb := testredis.Client(t, cl.Addrs()...)
	masters := map[string]bool{}
	for p := range 8 {
		for i := range 5 {
			testhub.XAdd(t, rdb, p, "event", fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"n":%d},"recipientIds":[%d]}`, 8+p, i, 70+p))
		}
		for _, addr := range cl.Addrs() {
			n, _ := testredis.NodeClient(t, addr).Do(context.Background(), rdb.B().Exists().Key(ingest.PartitionKey(p)).Build()).AsInt64()
			if n == 1 {
				masters[addr] = true
			}
		}
	}
	if len(masters) < 2 {
		t.Fatalf("8 partitions on %d master(s)", len(masters))
	}
	testhub.WaitIngested(t, rdb, 8)
	for p := range 8 {
		if got := th.HistoryNs(t, int64(8+p)); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
			t.Errorf("room %d's history: %v", 8+p, got)
		}
		if c := th.CountsOf(t, int64(70+p)).Unread; c != 5 {
			t.Errorf("user %d has %d unread, want 5", 70+p, c)
		}
	}
}

// A backlog (entries added before any hub ran) is read in big reads,
// published a few partitions side by side, each room still in order.
func TestIngest_ABacklogKeepsEachRoomsOrder(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	var cmds rueidis.Commands
	for i := range 150 {
		for p := range 4 {
			cmds = append(cmds, rdb.B().Xadd().Key(ingest.PartitionKey(p)).Id("*").FieldValue().
				FieldValue("event", fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"n":%d}}`, 40+p, i)).Build())
		}
	}
	for _, r := range rdb.DoMulti(context.Background(), cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	th := testhub.StartWith(t, rs.Addr(), testhub.WithIngest(4), nil)
	testhub.WaitIngested(t, rdb, 4)
	want := make([]int, 150)
	for i := range want {
		want[i] = i
	}
	for p := range 4 {
		if got := th.HistoryNs(t, int64(40+p)); !slices.Equal(got, want) {
			t.Errorf("room %d's history: %v", 40+p, got)
		}
	}
}

// One entry's publish fails for want of Redis in the middle of a read (its
// idempotency key is of another type): the other room's entries are published
// meanwhile, that room's later entries wait behind the failed one (none
// goes ahead of it), and once Redis can publish it every entry comes out
// once, in entry order (hardening IV, 11: the pipeline's in-order rule and
// finish's stop at the first entry to retry).
func TestIngest_ARoomThatCannotBePublishedWaitsInOrder(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	// Room 44's entry goes first and is published: the partition is
	// trimmed up to the entry that cannot be, never past it (hardening V,
	// 12: with that entry first, nothing was trimmed and a trim one entry
	// too far passed).
	testhub.XAdd(t, rdb, 0, "event", `{"roomId":44,"eventType":"comment.created","data":{"n":0}}`)
	var first string
	for n := 1; n <= 6; n++ {
		room := 42 + (n+1)%2 // 42, 43, 42, 43, …
		id := testhub.XAdd(t, rdb, 0, "event", fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{"n":%d},"recipientIds":[7]}`, room, n))
		if n == 1 {
			first = hub.IdempotencyKey(42, ingest.IdempotencyKey(id))
		}
	}
	testredis.Do(t, rdb, "HSET", first, "not", "a string") // the first entry's publish fails on it; the later ones' would not
	th := testhub.StartWith(t, rs.Addr(), testhub.WithIngest(1), nil)
	testhub.Eventually(t, 20*time.Second, "room 43's entries", func() bool {
		return slices.Equal(th.HistoryNs(t, 43), []int{2, 4, 6}) && slices.Equal(th.HistoryNs(t, 44), []int{0})
	})
	if got := th.HistoryNs(t, 42); len(got) != 0 {
		t.Fatalf("room 42 published %v while its first entry could not be: a later one went ahead", got)
	}
	testredis.Do(t, rdb, "DEL", first)
	testhub.WaitIngested(t, rdb, 1)
	if got := th.HistoryNs(t, 42); !slices.Equal(got, []int{1, 3, 5}) {
		t.Fatalf("room 42's history %v, want [1 3 5]", got)
	}
	if got := th.HistoryNs(t, 43); !slices.Equal(got, []int{2, 4, 6}) {
		t.Fatalf("room 43's history %v, want [2 4 6] (each once)", got)
	}
	if n := th.UnreadOf(t, 7); n != 6 {
		t.Fatalf("the recipient's unread count is %d, want 6 (each entry once)", n)
	}
}

// An entry an idle hub wakes on and cannot publish stays pending, and is
// published once it can be: the read acknowledges nothing (hardening V,
// 12: NOACK was caught only by an unrelated test).
func TestIngest_AnEntryWokenOnThatFailsIsReadAgain(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	th := testhub.StartWith(t, rs.Addr(), testhub.WithIngest(1), nil)
	testhub.Eventually(t, 15*time.Second, "the hub listening for entries (a connection tracking keys)", func() bool {
		list, _ := rdb.Do(context.Background(), rdb.B().ClientList().Build()).ToString()
		return strings.Contains(list, "flags=tB")
	})
	id := fmt.Sprintf("%d-0", time.Now().UnixMilli()+1)
	poison := hub.IdempotencyKey(42, ingest.IdempotencyKey(id))
	testredis.Do(t, rdb, "HSET", poison, "not", "a string") // its publish fails on it
	testredis.Do(t, rdb, "XADD", ingest.PartitionKey(0), id, "event", `{"roomId":42,"eventType":"comment.created","data":{"n":1}}`)
	testhub.Eventually(t, 15*time.Second, "the entry read and left pending", func() bool {
		n, _ := rdb.Do(context.Background(), rdb.B().Xpending().Key(ingest.PartitionKey(0)).Group(ingest.Group).Build()).ToArray()
		c, _ := n[0].AsInt64()
		return c == 1
	})
	testredis.Do(t, rdb, "DEL", poison)
	testhub.WaitIngested(t, rdb, 1)
	if got := th.HistoryNs(t, 42); !slices.Equal(got, []int{1}) {
		t.Fatalf("room 42's history %v, want [1]", got)
	}
}

// A partition taken over from an instance that died between reading and
// acknowledging is read from what that one left pending at once, with no
// new entry to wake the reader (a hub idle on its other partitions).
func TestIngest_ATakenPartitionsPendingEntriesAreReadAtOnce(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	testredis.Do(t, rdb, "XGROUP", "CREATE", ingest.PartitionKey(1), ingest.Group, "0", "MKSTREAM")
	for n := range 3 {
		testhub.XAdd(t, rdb, 1, "event", fmt.Sprintf(`{"roomId":51,"eventType":"comment.created","data":{"n":%d}}`, n))
	}
	// The holder that died: it read them (now pending) and holds the lease a while.
	testredis.Do(t, rdb, "XREADGROUP", "GROUP", ingest.Group, "roomhub", "COUNT", "10", "STREAMS", ingest.PartitionKey(1), ">")
	testredis.Do(t, rdb, "SET", ingest.LeaseKey(1), "the-dead-one", "PX", "2500")
	th := testhub.StartWith(t, rs.Addr(), testhub.WithIngest(2), nil)
	testhub.Eventually(t, 20*time.Second, "the pending entries published", func() bool { return slices.Equal(th.HistoryNs(t, 51), []int{0, 1, 2}) })
	testhub.WaitIngested(t, rdb, 2)
}

// README's redis-cli line publishes as printed: room 42's entry in
// ingest:{10} is published, with user 7's item (issue 43, the examples).
func TestIngest_ReadmesRedisCliLineRunsAsPrinted(t *testing.T) {
	line, _, _ := strings.Cut(strings.TrimSpace(testhub.SnippetAfter(t, "README.md", "**Ingest: publish without HTTP**", "sh")), "\n")
	if !strings.HasPrefix(line, "redis-cli XADD") {
		t.Fatalf("README's ingest example is not the redis-cli line this test knows: %q", line)
	}
	rs := testredis.Start(t)
	th := testhub.StartWith(t, rs.Addr(), testhub.WithIngest(16), nil)
	host, port, _ := strings.Cut(rs.Addr(), ":")
	out, err := exec.Command("bash", "-c", strings.Replace(line, "redis-cli ", "redis-cli -h "+host+" -p "+port+" ", 1)).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	testhub.Eventually(t, 15*time.Second, "room 42's event and user 7's item", func() bool {
		return len(th.HistoryNs(t, 42)) == 1 && th.CountsOf(t, 7).Unread == 1
	})
}
