package ingest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"roomhub/hub"
)

// round reads the owned partitions once (waiting up to wait for entries
// when the last round found none), publishes what it read and finishes it;
// it reports how many entries it read. An entry not published for want of
// Redis stays unacknowledged (pending), and every read returns what is
// pending first.
func (in *Ingest) round(ctx context.Context, wait time.Duration) (total int, err error) {
	defer func() {
		if err != nil {
			in.idle = false // what failed stays pending: read it at once
		}
	}()
	parts := in.ownedSorted()
	read, more, err := in.read(ctx, parts, wait)
	if err != nil {
		return 0, err
	}
	parts = in.ownedSorted() // less a partition the read found unreadable
	for _, p := range parts {
		total += len(read[p])
	}
	in.idle = !more // all there was: the next round waits for an entry
	if total == 0 {
		return 0, nil
	}
	start := time.Now()
	defer in.batchSeconds.UpdateDuration(start)
	// A big read goes in a few groups of partitions side by side, so that
	// the hub decodes one group while Redis runs another's scripts; a
	// room's entries are all in one partition, so each keeps its order.
	groups := min(readGroups, len(parts))
	if total < bigRead || groups == 1 {
		return total, in.publishRead(ctx, parts, read)
	}
	errs := make([]error, groups)
	var wg sync.WaitGroup
	for g := range groups {
		var mine []int
		for i, p := range parts {
			if i%groups == g {
				mine = append(mine, p)
			}
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[g] = in.publishRead(ctx, mine, read) }()
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

// Reads with at least bigRead entries are published in readGroups groups
// of partitions at once.
const (
	bigRead    = 256
	readGroups = 4
)

// publishRead publishes what a read found in parts and finishes it.
// A read is traced as one span. An entry whose traceparent field names a
// trace (the backend's, written with the entry) gets a span in that trace,
// as its child, sampled as the backend's flag says, linked to the read; an
// entry without one gets a span under the read's, when that records.
func (in *Ingest) publishRead(ctx context.Context, parts []int, read map[int][]Entry) error {
	var entries []Entry
	var from []int // each entry's partition
	for _, p := range parts {
		entries = append(entries, read[p]...)
		for range read[p] {
			from = append(from, p)
		}
	}
	if len(entries) == 0 {
		return nil
	}
	ctx, span := in.h.Tracer().Start(ctx, "ingest read", trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.Int("roomhub.entries", len(entries)), attribute.IntSlice("roomhub.partitions", parts)))
	defer span.End()
	for i := range entries {
		entries[i].Span = in.entrySpan(ctx, entries[i].ID, from[i], entries[i].traceparent)
	}
	outcomes := in.publishSafely(ctx, entries)
	for i, e := range entries {
		if e.Span != nil {
			endEntrySpan(e.Span, outcomes[i])
		}
	}
	return in.finish(ctx, parts, entries, from, outcomes)
}

// maxPanicsKept bounds the entries whose panics are remembered.
const maxPanicsKept = 1024

// publishSafely publishes entries; a panic while publishing them does not
// end the process. The entries are then published one at a time, in
// order: the one that panics is read again (it and every entry after it
// answer Retry, so every room keeps its order), and dead (INTERNAL) the
// second time it panics, so one entry the hub cannot publish never stalls
// its partition for good.
func (in *Ingest) publishSafely(ctx context.Context, entries []Entry) []Outcome {
	if out, ok := in.tryPublish(ctx, entries); ok {
		return out
	}
	out := make([]Outcome, len(entries))
	for i := range entries {
		one, ok := in.tryPublish(ctx, entries[i:i+1])
		if ok {
			out[i] = one[0]
			continue
		}
		if in.panicked(entries[i].ID) >= 2 {
			out[i] = Outcome{Result: Dead, Code: "INTERNAL", Message: "publishing this entry failed twice with an internal error"}
			continue
		}
		for j := i; j < len(entries); j++ {
			out[j] = Outcome{Result: Retry}
		}
		break
	}
	return out
}

// panicked counts a panic of entry id's publish and returns how many it has
// had (a dead one is forgotten).
func (in *Ingest) panicked(id string) int {
	in.panicsMu.Lock()
	defer in.panicsMu.Unlock()
	if len(in.panics) >= maxPanicsKept {
		clear(in.panics)
	}
	in.panics[id]++
	n := in.panics[id]
	if n >= 2 {
		delete(in.panics, id)
	}
	return n
}

// tryPublish publishes entries, reporting false when that panicked.
func (in *Ingest) tryPublish(ctx context.Context, entries []Entry) (out []Outcome, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			in.log.ErrorContext(ctx, "ingest: publishing entries panicked", "entries", len(entries), "first", entries[0].ID, "panic", r)
			ok = false
		}
	}()
	return in.publishEntries(ctx, entries), true
}

// entrySpan starts the span of entry id of partition p: a child of the
// trace context of its traceparent field tp, if it names one (ingest's
// equivalent of an internal route's header: the backend wrote it), linked
// to the read ctx holds; else under the read, when it records. Nil: none.
func (in *Ingest) entrySpan(ctx context.Context, id string, p int, tp string) trace.Span {
	attrs := trace.WithAttributes(attribute.String("roomhub.entry_id", id), attribute.Int("roomhub.partition", p))
	if sc, ok := hub.ParseTraceParent(tp); ok {
		read := trace.Link{SpanContext: trace.SpanContextFromContext(ctx)}
		_, span := in.h.Tracer().Start(trace.ContextWithRemoteSpanContext(ctx, sc), "ingest entry", trace.WithLinks(read), attrs)
		return span
	}
	if !trace.SpanFromContext(ctx).IsRecording() {
		return nil
	}
	_, span := in.h.Tracer().Start(ctx, "ingest entry", attrs)
	return span
}

// endEntrySpan records an entry's outcome on its span and ends it.
func endEntrySpan(span trace.Span, o Outcome) {
	span.SetAttributes(attribute.String("roomhub.outcome", o.Result.String()))
	if o.Result == Dead || o.Result == Retry {
		span.SetStatus(codes.Error, o.Code)
	}
	span.End()
}

// read reads up to INGEST_BATCH entries of each partition, pending ones
// first, within the read's byte budget (lua/ingest_read.lua); more says
// there may be more to read at once (a partition gave a full batch, or the
// budget stopped the read). On one Redis, when the last round read all
// there was, it first waits up to wait for an entry with one blocking
// XREADGROUP of at most one entry a partition (the entry stays pending, and
// the script, run on the partitions that got one, returns it); a cluster's
// partitions lie in different slots, so there each is read by its own
// script, in one pipeline, without waiting.
func (in *Ingest) read(ctx context.Context, parts []int, wait time.Duration) (out map[int][]Entry, more bool, err error) {
	out = make(map[int][]Entry, len(parts))
	args := []string{hub.IngestGroup, consumer, strconv.Itoa(in.cfg.IngestBatch), strconv.FormatInt(in.maxEntry, 10),
		strconv.FormatInt(in.readBudget, 10)}
	if !in.rdb.Sharded() {
		if in.idle {
			woken, err := in.wait(ctx, parts, wait)
			if err != nil || len(woken) == 0 {
				return out, false, err
			}
			parts = woken
		}
		keys := make([]string, len(parts))
		for i, p := range parts {
			keys[i] = hub.IngestKey(p)
		}
		arr, err := hub.Run(in.rdb, ctx, readScript, keys, args, rueidis.RedisResult.ToArray)
		if wrongType(err) {
			// One key of the read is not a stream: find it and leave it,
			// so that the others are read at once.
			return out, true, in.dropUnreadable(ctx, parts)
		}
		if err != nil {
			return nil, false, in.checkGroups(ctx, parts, err)
		}
		if len(arr) != len(parts)+1 {
			return nil, false, fmt.Errorf("%w: an ingest read answered %d values for %d partitions", hub.ErrRedisReply, len(arr), len(parts))
		}
		for i, p := range parts {
			if out[p], err = entriesOf(arr[i]); err != nil {
				return nil, false, err
			}
			more = more || len(out[p]) >= in.cfg.IngestBatch
		}
		full, _ := arr[len(parts)].AsInt64()
		return out, more || full == 1, nil
	}
	execs := make([]rueidis.LuaExec, len(parts))
	for i, p := range parts {
		execs[i] = rueidis.LuaExec{Keys: []string{hub.IngestKey(p)}, Args: args}
	}
	for i, r := range hub.RunMany(in.rdb, ctx, readScript, execs) {
		arr, err := r.ToArray()
		if wrongType(err) {
			in.leave(ctx, parts[i], "reading it")
			continue
		}
		if err == nil && len(arr) != 2 {
			err = fmt.Errorf("%w: an ingest read answered %d values", hub.ErrRedisReply, len(arr))
		}
		if err != nil {
			return nil, false, in.checkGroups(ctx, parts, hub.RedisErr(err))
		}
		p := parts[i]
		if out[p], err = entriesOf(arr[0]); err != nil {
			return nil, false, err
		}
		full, _ := arr[1].AsInt64()
		more = more || full == 1 || len(out[p]) >= in.cfg.IngestBatch
	}
	return out, more, nil
}

// wait blocks up to wait for an entry in any of parts (one XREADGROUP, at
// most one entry a partition, left pending for the script to return) and
// reports the partitions that got one.
func (in *Ingest) wait(ctx context.Context, parts []int, wait time.Duration) ([]int, error) {
	keys, ids := make([]string, len(parts)), make([]string, len(parts))
	for i, p := range parts {
		keys[i], ids[i] = hub.IngestKey(p), ">"
	}
	cmd := in.rdb.B().Xreadgroup().Group(hub.IngestGroup, consumer).Count(1).
		Block(max(wait, time.Millisecond).Milliseconds()).Streams().Key(keys...).Id(ids...).Build()
	got, err := hub.Call(in.rdb, ctx, cmd, asXRead)
	if wrongType(err) {
		return nil, in.dropUnreadable(ctx, parts)
	}
	if err != nil {
		return nil, in.checkGroups(ctx, parts, err)
	}
	var woken []int
	for i, p := range parts {
		if len(got[keys[i]]) > 0 {
			woken = append(woken, p)
		}
	}
	return woken, nil
}

// entriesOf reads one partition's entries from lua/ingest_read.lua's reply:
// five values each.
func entriesOf(m rueidis.RedisMessage) ([]Entry, error) {
	vals, err := m.ToArray()
	if err != nil || len(vals)%5 != 0 {
		return nil, fmt.Errorf("%w: an ingest read answered %d values", hub.ErrRedisReply, len(vals))
	}
	out := make([]Entry, 0, len(vals)/5)
	for k := 0; k < len(vals); k += 5 {
		var e Entry
		if e.ID, err = vals[k].ToString(); err != nil {
			return nil, fmt.Errorf("%w: an ingest entry's id", hub.ErrRedisReply)
		}
		e.Key = hub.IngestIdempotencyKey(e.ID)
		event, _ := vals[k+1].ToString()
		e.Body = []byte(event)
		e.traceparent, _ = vals[k+2].ToString()
		switch kind, _ := vals[k+4].AsInt64(); kind {
		case 1:
			e.TooLarge, _ = vals[k+3].AsInt64()
		case 2:
			e.Missing = true // Body: its fields, as a JSON object
		}
		out = append(out, e)
	}
	return out, nil
}

// asXRead reads an XREADGROUP reply; nil (nothing within the wait) is none.
func asXRead(r rueidis.RedisResult) (map[string][]rueidis.XRangeEntry, error) {
	got, err := r.AsXRead()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	return got, err
}

// checkGroups makes the groups again when a read found one missing (the
// stream was deleted), then returns err.
func (in *Ingest) checkGroups(ctx context.Context, parts []int, err error) error {
	if strings.Contains(err.Error(), "NOGROUP") {
		for _, p := range parts {
			if gerr := in.ensureGroup(ctx, p); gerr != nil {
				return gerr
			}
		}
	}
	return err
}

// finish acknowledges, per partition, the entries that were published or
// are dead, in their order up to the first to be retried (the rest is read
// again, pending, so the partition keeps its order); keeps the dead ones;
// and counts them.
func (in *Ingest) finish(ctx context.Context, parts []int, entries []Entry, from []int, outcomes []Outcome) error {
	now := hub.NowTimestamp()
	keepAfter := strconv.FormatInt(time.Now().Add(-in.cfg.DeliveryRecordTTL).UnixMilli(), 10)
	var counted [Dead + 1]int
	retried := false // some partition stopped at an entry to read again
	// One call for every partition on one Redis; one each on a cluster.
	var execs []rueidis.LuaExec
	exec := func() *rueidis.LuaExec {
		if len(execs) == 0 || in.rdb.Sharded() {
			execs = append(execs, rueidis.LuaExec{Args: []string{hub.IngestGroup, keepAfter, strconv.Itoa(maxDeadKept)}})
		}
		return &execs[len(execs)-1]
	}
	for _, p := range parts {
		var acked, dead []string
		trimTo := ""
		stopped := false
		for i, e := range entries {
			if from[i] != p {
				continue
			}
			o := outcomes[i]
			if stopped || o.Result == Retry {
				if !stopped {
					trimTo = e.ID // the first entry left to do
				}
				stopped = true
				continue
			}
			counted[o.Result]++
			acked = append(acked, e.ID)
			if o.Result == Dead {
				body, msg := e.Body, o.Message
				if len(body) > maxDeadEntry {
					body = body[:maxDeadEntry]
					msg += fmt.Sprintf(" (the entry's first %d of %d bytes are kept)", maxDeadEntry, len(e.Body))
				}
				dead = append(dead, e.ID, string(body), o.Code, msg, now)
			}
		}
		if stopped {
			retried = true // the rest stays pending: the next read returns it first
		} else if len(acked) > 0 {
			trimTo = nextID(acked[len(acked)-1])
		}
		if len(acked) == 0 {
			continue
		}
		e := exec()
		e.Keys = append(e.Keys, hub.IngestKey(p), hub.IngestDeadKey(p))
		e.Args = append(e.Args, trimTo, strconv.Itoa(len(acked)), strconv.Itoa(len(dead)/5))
		e.Args = append(append(e.Args, acked...), dead...)
	}
	var firstErr error
	for _, r := range hub.RunMany(in.rdb, ctx, doneScript, execs) {
		if err := r.Error(); err != nil && firstErr == nil {
			firstErr = hub.RedisErr(err)
		}
	}
	if firstErr != nil {
		return firstErr // published, not acknowledged: read again (pending) and answered duplicate
	}
	for r := Published; r <= Dead; r++ {
		in.entries[r].Add(counted[r])
	}
	if retried {
		return fmt.Errorf("%w: some entries could not be published and will be read again", hub.ErrRedis)
	}
	return nil
}
