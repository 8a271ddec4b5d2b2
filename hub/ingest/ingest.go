// Package ingest consumes the ingest streams: a backend publishes by
// XADD ingest:{p} * event <publish body>, and the hub publishes each entry
// once, in its partition's order, through the same path as an HTTP publish.
//
// Each partition is consumed by one instance at a time, which holds its
// lease (lock:ingest:{p}); the instances share the partitions evenly,
// counting each other in ingest:instances. Every instance reads through the
// one consumer group roomhub under one consumer name, so an instance that
// takes a partition over reads what its last holder left unacknowledged
// first. An entry that names no idempotency key is published under
// ingest:<entry id>, so an entry read twice publishes once. Entries are
// acknowledged once finished and dropped from the stream, so the stream's
// length is what is left to do (ingest_lag_entries).
package ingest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/trace"

	"roomhub/hub"
	"roomhub/hub/publish"
	"roomhub/lua"
)

var (
	leaseScript = hub.NewScript(lua.Lease)
	doneScript  = hub.NewScript(lua.IngestDone)
	readScript  = hub.NewScript(lua.IngestRead)
)

// consumer is the one consumer name of group roomhub: the lease, not the
// name, tells who reads a partition.
const consumer = "roomhub"

// Timings of the consuming loop.
const (
	maxBlock     = time.Second           // a read waits this long for entries at most
	idlePoll     = 20 * time.Millisecond // an idle consumer Redis does not wake (a cluster's, dev mode's) looks again after this
	sampleEvery  = 5 * time.Second       // the lag is sampled this often
	maxDeadKept  = 10000                 // dead entries kept per partition (approximately)
	maxDeadEntry = 64 << 10              // bytes of a dead entry's text kept
	releaseWait  = 2 * time.Second       // leases are released on Close within this
)

// Entry is one ingest entry on its way to be published.
type Entry struct {
	ID   string
	Body []byte // the entry's event field
	// Missing is set when the entry has no event field: Body is then its
	// fields as a JSON object, kept in the dead list.
	Missing bool
	// TooLarge is the entry's size when it is over the most an entry may
	// hold (its text was never read: Body is empty), else 0.
	TooLarge int64
	// Key is the idempotency key it is published under when its body names
	// none (ingest:<entry id>).
	Key string
	// Span is the entry's span when its read is traced (else nil): its
	// publish belongs to it.
	Span trace.Span
	// traceparent is the entry's field of that name: the backend's trace.
	traceparent string
}

// Result is what became of an entry.
type Result int

// The results of an entry: published, a duplicate of an earlier publish
// (an entry read twice, or a repeated idempotency key), refused (dead), or
// not done for want of Redis (read again later).
const (
	Published Result = iota
	Duplicate
	Dead
	Retry
)

// String names r as metrics and spans do.
func (r Result) String() string { return [...]string{"published", "duplicate", "dead", "retry"}[r] }

// Outcome is an entry's result and, when Dead, the error code and message
// the HTTP route would answer for its body.
type Outcome struct {
	Result        Result
	Code, Message string
}

// Publisher is the publish path ingest hands its entries to
// (*publish.Pipeline, the HTTP routes' own): each body answered in its
// place, one room's in their order.
type Publisher interface {
	Run(ctx context.Context, bodies []publish.Body, inOrder bool) []publish.Outcome
	// MaxData is the most bytes a publish's data may hold (PUBLISH_MAX_BYTES).
	MaxData() int64
}

// Ingest consumes the ingest partitions of one instance.
type Ingest struct {
	h       *hub.Hub
	rdb     *hub.Redis
	cfg     Config
	coreCfg hub.Config
	log     *slog.Logger
	publish Publisher
	id      string // this instance's holder id

	// maxEntry is the most bytes an entry may hold (the publish route's body
	// limit); readBudget, the bytes one read's entries may hold together.
	maxEntry, readBudget int64
	// readArgs are lua/ingest_read.lua's arguments, the same every read.
	readArgs []string
	// idle: the last round read all there was (nothing pending, no
	// partition full), so the next one waits for an entry first.
	idle bool
	// held is the last round's finish (lua/ingest_done.lua's call), sent
	// first in the next read's pipeline (one Redis); nil when there is none.
	held *rueidis.LuaExec
	// wake says when an entry comes, on one Redis (only run touches it).
	wake *waker

	// owned are the partitions this instance holds (only run touches it).
	owned map[int]*partition

	lag          []atomic.Int64 // per partition: entries not yet finished, last sampled
	unreadable   []atomic.Bool  // per partition: its key is not a stream (found by a read, a take or a sample)
	oldestMs     atomic.Int64   // the oldest unfinished entry's age, ms, last sampled
	readFailing  atomic.Bool    // the last read failed
	shareFailing atomic.Bool    // the last lease round failed (a partition could not be taken, say)
	started      atomic.Bool

	entries      map[Result]*metrics.Counter
	batchSeconds *metrics.Histogram

	mu      sync.Mutex // guards ownedIDs, for Owned
	ownedID []int

	// panics counts, by entry id, the publishes of an entry that panicked:
	// the second makes it dead.
	panicsMu sync.Mutex
	panics   map[string]int
}

// partition is one partition this instance holds.
type partition struct {
	p int
}

// New registers the ingest metrics and returns the consumer of cfg on h;
// Start runs it with publish. It does nothing when INGEST_PARTITIONS is 0.
func New(h *hub.Hub, cfg Config, log *slog.Logger) *Ingest {
	in := &Ingest{h: h, rdb: h.Redis(), cfg: cfg, coreCfg: h.Config(), log: log, id: newID(), owned: map[int]*partition{}, wake: newWaker(h.Redis(), log),
		lag: make([]atomic.Int64, cfg.Partitions), unreadable: make([]atomic.Bool, cfg.Partitions),
		entries: map[Result]*metrics.Counter{}, panics: map[string]int{}}
	set := h.Metrics().Set
	for _, r := range []Result{Published, Duplicate, Dead} {
		in.entries[r] = set.NewCounter(fmt.Sprintf(`ingest_entries_total{result=%q}`, r))
	}
	in.batchSeconds = set.NewHistogram("ingest_batch_seconds")
	set.NewGauge("ingest_oldest_pending_seconds", func() float64 { return float64(in.oldestMs.Load()) / 1000 })
	for p := range cfg.Partitions {
		set.NewGauge(fmt.Sprintf(`ingest_lag_entries{partition="%d"}`, p), func() float64 { return float64(in.lag[p].Load()) })
		set.NewGauge(fmt.Sprintf(`ingest_partition_unreadable{partition="%d"}`, p), func() float64 {
			if in.unreadable[p].Load() {
				return 1
			}
			return 0
		})
	}
	return in
}

// minReadBudget is the least a read's entries may hold together.
const minReadBudget = 8 << 20

// Start consumes the partitions this instance gets, publishing through
// p, until the hub closes; then it gives its leases back. An entry
// larger than a publish body may be (publish.MaxBody) is dead without
// its text ever being read; a read's entries hold at most max(8 MiB, 2 ×
// that) together.
func (in *Ingest) Start(p Publisher) {
	if in.cfg.Partitions == 0 {
		return
	}
	in.publish = p
	in.maxEntry = publish.MaxBody(p.MaxData())
	in.readBudget = max(minReadBudget, 2*in.maxEntry)
	in.readArgs = []string{Group, consumer, strconv.Itoa(in.cfg.Batch), strconv.FormatInt(in.maxEntry, 10),
		strconv.FormatInt(in.readBudget, 10)}
	in.started.Store(true)
	in.h.Go(in.run)
}

// Status is what /health says of ingest: "off", "ok", or "degraded" when
// this instance's last read or lease round failed, or a partition cannot
// be read.
func (in *Ingest) Status() string {
	switch {
	case !in.started.Load():
		return "off"
	case in.readFailing.Load() || in.shareFailing.Load():
		return "degraded"
	}
	for i := range in.unreadable {
		if in.unreadable[i].Load() {
			return "degraded"
		}
	}
	return "ok"
}

// Lag is the entries not yet finished in every partition, last sampled.
func (in *Ingest) Lag() int64 {
	var n int64
	for i := range in.lag {
		n += in.lag[i].Load()
	}
	return n
}

// Owned lists the partitions this instance consumes now.
func (in *Ingest) Owned() []int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.ownedID)
}

// Partition is the ingest partition of a room with n partitions.
func Partition(room int64, n int) int { return int(room % int64(n)) }

// tick is how often the leases are renewed and shared out: a dead
// instance's partitions are taken over within LOCK_TTL_SECS and a tick.
func (in *Ingest) tick() time.Duration { return min(in.coreCfg.LockTTL/3, 2*time.Second) }

// run is the instance's consuming loop: between reads it renews, takes and
// gives back leases every tick.
func (in *Ingest) run(ctx context.Context) {
	defer in.releaseAll()
	defer in.wake.close()
	in.logStrays(ctx)
	var nextLease, nextSample time.Time
	backoff := hub.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second} // after failed reads
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(nextLease) {
			err := in.share(ctx)
			if err != nil && ctx.Err() == nil {
				in.log.Warn("ingest: sharing the partitions", "err", err)
			}
			in.shareFailing.Store(err != nil)
			nextLease = now.Add(in.tick())
		}
		if !now.Before(nextSample) {
			if err := in.sample(ctx); err != nil && ctx.Err() == nil {
				in.log.Warn("ingest: sampling the lag", "err", err)
			}
			nextSample = now.Add(sampleEvery)
		}
		wait := min(time.Until(nextLease), maxBlock)
		if len(in.owned) == 0 {
			hub.Sleep(ctx, wait)
			continue
		}
		if err := in.round(ctx, wait); err != nil {
			if ctx.Err() != nil {
				return
			}
			in.readFailing.Store(true)
			d := backoff.Next()
			in.log.Warn("ingest: reading or publishing", "err", err, "retryIn", d.String())
			hub.Sleep(ctx, d)
			continue
		}
		in.readFailing.Store(false)
		backoff.Reset()
	}
}

// ensureGroup creates the consumer group (and the stream) of partition p,
// reading from the start: entries added before any hub ran are published.
func (in *Ingest) ensureGroup(ctx context.Context, p int) error {
	_, err := hub.Call(in.rdb, ctx, in.rdb.B().XgroupCreate().Key(PartitionKey(p)).Group(Group).
		Id("0").Mkstream().Build(), hub.NoReply)
	if err != nil && strings.Contains(err.Error(), "BUSYGROUP") {
		return nil
	}
	return err
}

func (in *Ingest) ownedSorted() []int {
	ps := make([]int, 0, len(in.owned))
	for p := range in.owned {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// publishOwned makes the owned partitions visible to Owned.
func (in *Ingest) publishOwned() {
	ps := in.ownedSorted()
	in.mu.Lock()
	in.ownedID = ps
	in.mu.Unlock()
}

// sample reads each partition's length (what is left to do) and its first
// entry (the oldest), in one pipeline.
func (in *Ingest) sample(ctx context.Context) error {
	n := in.cfg.Partitions
	cmds := make(rueidis.Commands, 0, 2*n)
	for p := range n {
		cmds = append(cmds, in.rdb.B().Xlen().Key(PartitionKey(p)).Build(),
			in.rdb.B().Xrange().Key(PartitionKey(p)).Start("-").End("+").Count(1).Build())
	}
	res := hub.DoMany(in.rdb, ctx, cmds)
	now := time.Now().UnixMilli()
	var oldest int64
	for p := range n {
		length, err := res[2*p].AsInt64()
		if wrongType(err) {
			in.markUnreadable(p, true, "measuring its lag")
			in.lag[p].Store(0)
			continue
		}
		if err != nil {
			return hub.RedisErr(err)
		}
		in.markUnreadable(p, false, "")
		in.lag[p].Store(length)
		first, err := res[2*p+1].AsXRange()
		if err != nil || len(first) == 0 {
			continue
		}
		if ms, ok := idMs(first[0].ID); ok && length > 0 {
			oldest = max(oldest, now-ms)
		}
	}
	in.oldestMs.Store(oldest)
	return nil
}

// idMs is an entry id's time part.
func idMs(id string) (int64, bool) {
	ms, _, _ := strings.Cut(id, "-")
	v, err := strconv.ParseInt(ms, 10, 64)
	return v, err == nil
}

// nextID is the entry id right after id ("5-3" → "5-4").
func nextID(id string) string {
	ms, seq, ok := strings.Cut(id, "-")
	s, err := strconv.ParseUint(seq, 10, 64)
	if !ok || err != nil {
		return id
	}
	if s == math.MaxUint64 {
		m, _ := strconv.ParseUint(ms, 10, 64)
		return strconv.FormatUint(m+1, 10) + "-0"
	}
	return ms + "-" + strconv.FormatUint(s+1, 10)
}

// hashOf is FNV-1a of s.
func hashOf(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

// newID is 16 random bytes in hex: this instance's holder id.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	return hex.EncodeToString(b[:])
}
