package ingest_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"roomhub/hub/ingest"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// An instance that cannot consume a partition (its key is not a stream)
// says so in /health and stays healthy for its streams; it consumes the
// other partitions meanwhile, and the bad one once it is a stream again.
func TestIngest_APartitionThatCannotBeReadDegradesIngestOnly(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	testredis.Do(t, rdb, "SET", ingest.PartitionKey(1), "not a stream")
	th := testhub.StartWith(t, rs.Addr(), testhub.WithIngest(2), nil)
	health := func() (int, string) {
		code, env := th.Do(t, http.MethodGet, "/health", nil, "")
		var h struct{ Ingest string }
		testhub.Remarshal(t, env.Result, &h)
		return code, h.Ingest
	}
	testhub.Eventually(t, 20*time.Second, "/health to say ingest is degraded", func() bool { _, s := health(); return s == "degraded" })
	if code, _ := health(); code != 200 {
		t.Fatalf("/health answers %d: a partition it cannot read must not take the streams down", code)
	}
	testhub.XAdd(t, rdb, 0, "event", `{"roomId":2,"eventType":"comment.created","data":{}}`)
	testhub.WaitIngested(t, rdb, 1)
	testredis.Do(t, rdb, "DEL", ingest.PartitionKey(1))
	testhub.XAdd(t, rdb, 1, "event", `{"roomId":3,"eventType":"comment.created","data":{}}`)
	testhub.WaitIngested(t, rdb, 2)
	testhub.Eventually(t, 20*time.Second, "/health to say ingest is ok", func() bool { _, s := health(); return s == "ok" })
}

// One key that is not a stream, set after the hub took its partition,
// stalls that partition alone: the others are published meanwhile, the
// partition is reported (ingest_partition_unreadable, /health degraded),
// and it is consumed again once it is a stream (hardening IV, 9).
func TestIngest_AWrongKeyStallsOnlyItsPartition(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	th := testhub.StartWith(t, rs.Addr(), testhub.WithIngest(4), nil)
	testhub.Eventually(t, 20*time.Second, "the hub to consume the 4 partitions", func() bool { return len(th.Ingest.Owned()) == 4 })
	testredis.Do(t, rdb, "DEL", ingest.PartitionKey(3))
	testredis.Do(t, rdb, "SET", ingest.PartitionKey(3), "oops")
	for p := range 3 {
		testhub.XAdd(t, rdb, p, "event", fmt.Sprintf(`{"roomId":%d,"eventType":"comment.created","data":{}}`, p))
	}
	testhub.WaitIngested(t, rdb, 3)
	testhub.Eventually(t, 20*time.Second, "the partition to be reported", func() bool {
		return testhub.MetricValue(t, th, `ingest_partition_unreadable{partition="3"}`) == "1" && th.Ingest.Status() == "degraded"
	})
	testredis.Do(t, rdb, "DEL", ingest.PartitionKey(3))
	testhub.XAdd(t, rdb, 3, "event", `{"roomId":3,"eventType":"comment.created","data":{}}`)
	testhub.WaitIngested(t, rdb, 4)
	testhub.Eventually(t, 20*time.Second, "the partition to be read again", func() bool {
		return testhub.MetricValue(t, th, `ingest_partition_unreadable{partition="3"}`) == "0" && th.Ingest.Status() == "ok"
	})
}

// The lag of the partitions that can be read is measured beside one that
// cannot: another holder keeps partitions 1 to 3 (so their entries wait),
// partition 0's key is a string; ingest_lag_entries and /health's
// ingestLag count partition 3's five entries (hardening IV, 9).
func TestIngest_LagIsMeasuredBesideAnUnreadablePartition(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	for p := 1; p < 4; p++ {
		testredis.Do(t, rdb, "SET", ingest.LeaseKey(p), "another-instance", "PX", "120000")
	}
	for range 5 {
		testhub.XAdd(t, rdb, 3, "event", `{"roomId":3,"eventType":"comment.created","data":{}}`)
	}
	testredis.Do(t, rdb, "SET", ingest.PartitionKey(0), "oops")
	th := testhub.StartWith(t, rs.Addr(), testhub.WithIngest(4), nil)
	testhub.Eventually(t, 20*time.Second, "the lag of partition 3", func() bool {
		if testhub.MetricValue(t, th, `ingest_lag_entries{partition="3"}`) != "5" {
			return false
		}
		_, env := th.Do(t, http.MethodGet, "/health", nil, "")
		var h struct{ IngestLag int64 }
		testhub.Remarshal(t, env.Result, &h)
		return h.IngestLag == 5
	})
}

// Streams the hub will never read (a partition past INGEST_PARTITIONS, a
// name without braces) are found at start, with their lengths; the hub's
// own keys are not (hardening IV, 9).
func TestIngest_FindsStreamsItWillNeverRead(t *testing.T) {
	t.Parallel()
	rs := testredis.Start(t)
	rdb := testredis.Client(t, rs.Addr())
	testredis.Do(t, rdb, "XADD", "ingest:{16}", "*", "event", "{}")
	testredis.Do(t, rdb, "XADD", "ingest:10", "*", "event", "{}")
	testredis.Do(t, rdb, "XADD", "ingest:10", "*", "event", "{}")
	testredis.Do(t, rdb, "SET", "ingest:notastream", "x")
	th := testhub.StartWith(t, rs.Addr(), testhub.WithIngest(16), nil)
	testhub.XAdd(t, rdb, 2, "event", `{"roomId":2,"eventType":"comment.created","data":{"k":"x"}}`) // a partition of its own, and a dead list:
	testhub.XAdd(t, rdb, 2, "event", `not json`)
	testhub.WaitIngested(t, rdb, 3)
	strays, err := th.Ingest.Strays(t.Context())
	slices.SortFunc(strays, func(a, b ingest.Stray) int { return strings.Compare(a.Key, b.Key) })
	if err != nil || fmt.Sprint(strays) != "[{ingest:10 2} {ingest:{16} 1}]" {
		t.Fatalf("strays %v, %v", strays, err)
	}
}
