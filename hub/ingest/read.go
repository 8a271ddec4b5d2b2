package ingest

import (
	"context"
	"errors"
	"fmt"
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
// when the last round found none: idleWait), publishes what it read and
// finishes it. An entry not published for want of Redis stays
// unacknowledged (pending), and every read returns what is pending first.
func (in *Ingest) round(ctx context.Context, wait time.Duration) (err error) {
	defer func() {
		if err != nil {
			in.idle = false // what failed stays pending: read it at once
		}
	}()
	if err := in.idleWait(ctx, wait); err != nil {
		return err
	}
	parts := in.ownedSorted()
	read, more, err := in.read(ctx, parts)
	if err != nil {
		return err
	}
	parts = in.ownedSorted() // less a partition the read found unreadable
	total := 0
	for _, p := range parts {
		total += len(read[p])
	}
	in.idle = !more // all there was: the next round waits for an entry
	if total == 0 {
		return nil
	}
	start := time.Now()
	defer in.batchSeconds.UpdateDuration(start)
	// A big read goes in a few groups of partitions side by side, so that
	// the hub decodes one group while Redis runs another's scripts; a
	// room's entries are all in one partition, so each keeps its order.
	groups := min(readGroups, len(parts))
	if total < bigRead || groups == 1 {
		return in.publishRead(ctx, parts, read, true)
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
		go func() { defer wg.Done(); errs[g] = in.publishRead(ctx, mine, read, false) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Reads with at least bigRead entries are published in readGroups groups
// of partitions at once.
const (
	bigRead    = 256
	readGroups = 4
)

// publishRead publishes what a read found in parts and finishes it (hold:
// the finish may be held for the next read, see finish).
// A read is traced as one span. An entry whose traceparent field names a
// trace (the backend's, written with the entry) gets a span in that trace,
// as its child, sampled as the backend's flag says, linked to the read; an
// entry without one gets a span under the read's, when that records.
func (in *Ingest) publishRead(ctx context.Context, parts []int, read map[int][]Entry, hold bool) error {
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
	return in.finish(ctx, parts, entries, from, outcomes, hold)
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
// budget stopped the read). On one Redis it is one pipeline (readOne); a
// cluster's partitions lie in different slots, so there each is read by its
// own script, in one pipeline.
func (in *Ingest) read(ctx context.Context, parts []int) (out map[int][]Entry, more bool, err error) {
	if !in.rdb.Sharded() {
		return in.readOne(ctx, parts)
	}
	out = make(map[int][]Entry, len(parts))
	execs := make([]rueidis.LuaExec, len(parts))
	for i, p := range parts {
		execs[i] = rueidis.LuaExec{Keys: []string{PartitionKey(p)}, Args: in.readArgs}
	}
	for i, r := range hub.RunMany(in.rdb, ctx, readScript, execs) {
		arr, err := r.ToArray()
		if wrongType(err) {
			in.leave(ctx, parts[i], "reading it")
			continue
		}
		if err != nil {
			return nil, false, in.checkGroups(ctx, parts, hub.RedisErr(err))
		}
		partMore, err := in.readReply(arr, parts[i:i+1], out)
		if err != nil {
			return nil, false, err
		}
		more = more || partMore
	}
	return out, more, nil
}

// readReply puts lua/ingest_read.lua's reply arr for parts into out, and
// says whether there may be more to read at once: a partition gave a full
// batch, or the byte budget stopped the read.
func (in *Ingest) readReply(arr []rueidis.RedisMessage, parts []int, out map[int][]Entry) (more bool, err error) {
	if len(arr) != len(parts)+1 {
		return false, fmt.Errorf("%w: an ingest read answered %d values for %d partitions", hub.ErrRedisReply, len(arr), len(parts))
	}
	for i, p := range parts {
		if out[p], err = entriesOf(arr[i]); err != nil {
			return false, err
		}
		more = more || len(out[p]) >= in.cfg.Batch
	}
	full, _ := arr[len(parts)].AsInt64()
	return more || full == 1, nil
}

// readOne reads parts on one Redis in one pipeline, led by the last
// round's finish (its acknowledgements and trims, held back to travel
// here): the read script (lua/ingest_read.lua), pending entries first,
// within the byte budget. When the last round read all there was, the
// consumer first waits for Redis to say an entry came (idleWait). A round
// is thus batched by what is waiting, never by sleeping. Both go through
// the waker's connection while it listens, so that Redis does not wake the
// consumer for its own reads and trims (NOLOOP).
func (in *Ingest) readOne(ctx context.Context, parts []int) (map[int][]Entry, bool, error) {
	keys := make([]string, len(parts))
	for i, p := range parts {
		keys[i] = PartitionKey(p)
	}
	var cmds rueidis.Commands
	done := in.held
	if done != nil {
		cmds = append(cmds, in.rdb.ScriptCmd(doneScript, *done))
	}
	cmds = append(cmds, in.rdb.ScriptCmd(readScript, rueidis.LuaExec{Keys: keys, Args: in.readArgs}))
	res := hub.DoManyOn(in.rdb, ctx, in.wake.via(), cmds)
	if done != nil {
		if err := in.sent(cmds[0], res[0]); err != nil {
			return nil, false, err // what the read found is read again, after the finish
		}
		res = res[1:]
	}
	arr, err := res[0].ToArray()
	in.rdb.Learned(readScript, cmds[len(cmds)-1], err)
	if err != nil {
		return in.readFailed(ctx, parts, hub.RedisErr(err))
	}
	out := make(map[int][]Entry, len(parts))
	more, err := in.readReply(arr, parts, out)
	if err != nil {
		return nil, false, err
	}
	return out, more, nil
}

// idleWait waits, when the last round read all there was, for an entry to
// come: on one Redis until Redis says a stream changed (waker), at most
// wait, the last round's finish sent first; on a cluster, or where Redis
// will not say, idlePoll (or not at all when a finish is held: it goes
// with the read at once). Then it forgets the wake-ups so far: the read
// that follows sees what they were about.
func (in *Ingest) idleWait(ctx context.Context, wait time.Duration) error {
	switch {
	case !in.idle:
	case !in.rdb.Sharded() && in.wake.arm(ctx):
		if err := in.sendHeld(ctx); err != nil {
			return err
		}
		in.wake.wait(ctx, wait)
	case in.held == nil:
		hub.Sleep(ctx, min(idlePoll, wait))
	}
	in.wake.drain()
	return nil
}

// readFailed answers a read's error: a key that is not a stream is found
// and left, and the others are read again at once (more); a missing group
// is made again.
func (in *Ingest) readFailed(ctx context.Context, parts []int, err error) (map[int][]Entry, bool, error) {
	if wrongType(err) {
		return nil, true, in.dropUnreadable(ctx, parts)
	}
	return nil, false, in.checkGroups(ctx, parts, err)
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
		e.Key = IdempotencyKey(e.ID)
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
