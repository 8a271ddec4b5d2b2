package testhub

import (
	"context"
	"net/http"
	"roomhub/hub/ingest"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// IngestDead reads GET /internal/ingest/dead?query.
func (th *Hub) IngestDead(t *testing.T, query string) (int, DeadPage) {
	t.Helper()
	code, env := th.Do(t, http.MethodGet, "/api/v1/internal/ingest/dead?"+query,
		map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey}, "")
	var page DeadPage
	if code == 200 {
		Remarshal(t, env.Result, &page)
	}
	return code, page
}

// DeadPage is a page of the ingest dead list.
type DeadPage struct {
	Entries   []ingest.DeadEntry
	NextAfter *string
}

// WithIngest consumes n ingest partitions, leases of LOCK_TTL_SECS=1.
func WithIngest(n int) func(*Configs) {
	return func(c *Configs) { c.Ingest.Partitions, c.LockTTL = n, time.Second }
}

// XAdd adds one entry (field → value pairs) to partition p.
func XAdd(t *testing.T, rdb rueidis.Client, p int, fv ...string) string {
	t.Helper()
	b := rdb.B().Xadd().Key(ingest.PartitionKey(p)).Maxlen().Almost().Threshold("1000000").Id("*").FieldValue()
	for i := 0; i+1 < len(fv); i += 2 {
		b = b.FieldValue(fv[i], fv[i+1])
	}
	id, err := rdb.Do(context.Background(), b.Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// WaitIngested waits until partitions 0..n-1 have nothing left to do.
func WaitIngested(t *testing.T, rdb rueidis.Client, n int) {
	t.Helper()
	Eventually(t, 30*time.Second, "the ingest streams to be finished", func() bool {
		for p := range n {
			if l, _ := rdb.Do(context.Background(), rdb.B().Xlen().Key(ingest.PartitionKey(p)).Build()).AsInt64(); l != 0 {
				return false
			}
		}
		return true
	})
}
