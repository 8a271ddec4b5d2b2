package delivery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// pollEvery is how often an instance looks for due deliveries when the
// last look found none.
const pollEvery = 250 * time.Millisecond

// trimDeadEvery is how often the poller drops dead index entries older than
// DELIVERY_RECORD_DAYS.
const trimDeadEvery = time.Minute

// pollPage bounds the index entries read per shard per look.
const pollPage = 256

// claimLimit bounds the deliveries of one user one claim takes.
const claimLimit = 100

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// shardOf is the index shard of a user.
func shardOf(user int64) int { return int(user % Shards) }

// trigger is an index entry: look at user at ms.
type trigger struct {
	user   int64
	member string
}

// triggerMember names an index entry: "<user>:<ms>:<tag>".
func triggerMember(user, ms int64, tag string) string {
	return itoa(user) + ":" + itoa(ms) + ":" + tag
}

func parseTrigger(m string) (trigger, bool) {
	u, _, ok := strings.Cut(m, ":")
	if !ok {
		return trigger{}, false
	}
	user, ok := hub.ParseID(u)
	return trigger{user: user, member: m}, ok
}

func randomTag() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "w" + hex.EncodeToString(b[:])
}

// Index writes the index entries of deliveries due at dueMs for users,
// tagged (a publish: its notificationId, so that a retry writes the same
// ones). Call it after the deliveries are written.
func (d *Delivery) Index(ctx context.Context, users []int64, dues []int64, tag string) error {
	cmds := make(rueidis.Commands, 0, len(users))
	for i, u := range users {
		if dues[i] < 0 {
			continue
		}
		cmds = append(cmds, d.rdb.B().Zadd().Key(DueIndexKey(shardOf(u))).ScoreMember().
			ScoreMember(float64(dues[i]), triggerMember(u, dues[i], tag)).Build())
	}
	if len(cmds) == 0 {
		return nil
	}
	return hub.CallMany(d.rdb, ctx, cmds)
}

// runPoller looks for due deliveries and starts a job per user, at most
// Concurrency at once, until ctx ends; once a minute it trims the dead index.
func (d *Delivery) runPoller(ctx context.Context) {
	sem := make(chan struct{}, d.Concurrency)
	d.shares = channelShares(d.cfg.Channels, d.Concurrency)
	start := 0
	var trimmed time.Time
	for {
		if time.Since(trimmed) >= trimDeadEvery {
			if err := d.trimDead(ctx); err != nil && ctx.Err() == nil {
				d.log.Warn("trimming dead deliveries", "err", err)
			}
			trimmed = time.Now()
		}
		full := false
		for i := range Shards {
			shard := (start + i) % Shards
			n, started, err := d.pollShard(ctx, shard, sem)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				d.log.Warn("looking for due deliveries", "shard", shard, "err", err)
				continue
			}
			// A full page means more is due: look again at once, unless
			// every user in it is already being served here (no spinning
			// on entries a running job will clear).
			full = full || (n == pollPage && started > 0)
		}
		start++
		if full {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pollEvery):
		}
	}
}

// pollShard starts jobs for the users of one index shard with something
// due, and reports how many entries it read and how many jobs it started.
func (d *Delivery) pollShard(ctx context.Context, shard int, sem chan struct{}) (n, started int, err error) {
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	members, err := hub.Call(d.rdb, ctx, d.rdb.B().Zrangebyscore().Key(DueIndexKey(shard)).Min("-inf").Max(now).
		Limit(0, pollPage).Build(), rueidis.RedisResult.AsStrSlice)
	if err != nil {
		return 0, 0, err
	}
	byUser := map[int64][]string{}
	var order []int64
	for _, m := range members {
		t, ok := parseTrigger(m)
		if !ok {
			_, _ = hub.Call(d.rdb, ctx, d.rdb.B().Zrem().Key(DueIndexKey(shard)).Member(m).Build(), hub.NoReply)
			continue
		}
		if _, seen := byUser[t.user]; !seen {
			order = append(order, t.user)
		}
		byUser[t.user] = append(byUser[t.user], m)
	}
	for _, u := range order {
		if !d.take(u) {
			continue // a job of this instance is at it
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			d.release(u)
			return len(members), started, nil
		}
		triggers := byUser[u]
		if !d.core.Go(func(ctx context.Context) {
			defer func() { <-sem; d.release(u) }()
			if err := d.serve(ctx, u, triggers); err != nil && ctx.Err() == nil {
				d.log.Warn("handing off deliveries", "user", u, "err", err)
			}
		}) {
			<-sem
			d.release(u)
			continue
		}
		started++
	}
	return len(members), started, nil
}

func (d *Delivery) take(u int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inFlight[u] {
		return false
	}
	d.inFlight[u] = true
	return true
}

func (d *Delivery) release(u int64) {
	d.mu.Lock()
	delete(d.inFlight, u)
	d.mu.Unlock()
}

// handoff is one claimed hand-off of a user.
type handoff struct {
	channel string
	attempt int
	head    string   // the first record id: "<notificationId>|<channel>"
	ids     []string // every record id
	traces  []string // each record's publish traceparent, "" for none
	items   []json.RawMessage
}

// claimed is what a claim answered.
type claimed struct {
	next     string // the user's next due time (ms), "" when none
	moves    [][3]string
	handoffs []handoff
}

// itemBytes is what one claimed item may hold at most: its data and the
// item's own fields.
func (d *Delivery) itemBytes() int64 { return d.ItemMaxBytes + 2048 }

// claimItems is how many items one claim may take: claimLimit, fewer when
// items are so large that a few claims would fill the byte budget.
func (d *Delivery) claimItems() int {
	return int(max(1, min(claimLimit, d.cfg.InflightBytes/(8*d.itemBytes()))))
}

// serve claims user's due deliveries, replaces the index entries that led
// here by one at the next due time, hands the claimed ones off and records
// how each ended. Before it claims, it reserves the most its claim may hold
// from the instance's byte budget, and gives back what the claim did not
// take; the rest when it is done.
func (d *Delivery) serve(ctx context.Context, user int64, triggers []string) error {
	quietEnd, err := d.quietEnd(ctx, user, time.Now())
	if err != nil {
		return err
	}
	items := d.claimItems()
	reserved := min(int64(items)*d.itemBytes(), d.cfg.InflightBytes)
	if err := d.budget.Acquire(ctx, reserved); err != nil {
		return err
	}
	token := randomTag()
	c, err := d.claim(ctx, user, token, quietEnd, items)
	if err != nil {
		d.budget.Release(reserved)
		return err
	}
	held := min(c.bytes(), reserved)
	d.budget.Release(reserved - held)
	defer d.budget.Release(held)
	for _, m := range c.moves {
		d.count(m[0], m[1], m[2])
	}
	// Index invariant (doc.go): the next entry in before the old ones out.
	shardKey := DueIndexKey(shardOf(user))
	nextEntry, err := d.indexNext(ctx, user, c.next)
	if err != nil {
		return err
	}
	if err := hub.CallMany(d.rdb, ctx, rueidis.Commands{d.rdb.B().Zrem().Key(shardKey).Member(triggers...).Build()}); err != nil {
		return err
	}
	next := c.next
	failedAt := map[string]int64{} // channel → when its failed hand-off is due again
	for _, h := range c.handoffs {
		outcome, code, again := d.attempt(ctx, user, token, h, failedAt)
		n, changed, err := d.end(ctx, user, token, h, outcome, again, code)
		if err != nil {
			return err
		}
		next = n
		if changed > 0 {
			d.countOutcome(h.channel, outcome, code, changed)
		}
	}
	if next != c.next {
		if _, err := d.indexNext(ctx, user, next); err != nil {
			return err
		}
		if nextEntry != "" {
			ctx, cancel := hub.Detach(ctx) // the outcomes are written: tidy up even when closing
			defer cancel()
			_, err := hub.Call(d.rdb, ctx, d.rdb.B().Zrem().Key(shardKey).Member(nextEntry).Build(), hub.NoReply)
			return err
		}
	}
	return nil
}

// attempt hands h off, unless an earlier hand-off of its channel failed in
// this job (failedAt: it waits behind it) or the channel's share of the
// jobs is busy, and says how it ended: sent, skipped, requeue (not tried,
// no attempt spent), retry or dead, with the code and when it is due again.
// A failure that makes the channel's later hand-offs wait is put in
// failedAt.
func (d *Delivery) attempt(ctx context.Context, user int64, token string, h handoff, failedAt map[string]int64) (outcome, code string, again int64) {
	if at, ok := failedAt[h.channel]; ok {
		return "requeue", "", at
	}
	if !d.takeShare(h.channel) {
		// The channel's share of the jobs is busy (a slow push service or
		// gateway): not tried, no attempt spent.
		again = time.Now().Add(shareWait).UnixMilli()
		failedAt[h.channel] = again
		return "requeue", "", again
	}
	sctx, span := d.attemptSpan(ctx, user, h)
	a := d.send(sctx, user, token, h)
	d.giveShare(h.channel)
	endAttemptSpan(span, a)
	switch {
	case !a.sent && ctx.Err() != nil:
		// This instance is closing: the call was cut off, not refused.
		// Another instance sends it again at once.
		outcome, again = "requeue", time.Now().UnixMilli()
	case a.sent:
		return "sent", "", 0
	case !a.wait.IsZero():
		outcome, again = "requeue", a.wait.UnixMilli()
	case a.skipped != "":
		return "skipped", a.skipped, 0
	case a.retryable && h.attempt < d.cfg.MaxAttempts:
		outcome, code = "retry", a.code
		again = time.Now().Add(backoff(d.cfg.Backoff, h.attempt, a.retryAfter)).UnixMilli()
	default:
		return "dead", a.code, 0
	}
	failedAt[h.channel] = again
	return outcome, code, again
}

// countOutcome counts n records that ended a hand-off as outcome.
func (d *Delivery) countOutcome(ch, outcome, code string, n int) {
	state := map[string]string{"sent": "sent", "retry": "retrying", "dead": "dead", "skipped": "skipped"}[outcome]
	if state == "" {
		return // requeued: back as it was
	}
	reason := ""
	if outcome == "skipped" {
		reason = code
	}
	for range n {
		d.count(ch, state, reason)
	}
}

// indexNext puts in an index entry for user at next (ms; "" for none) and
// returns its member.
func (d *Delivery) indexNext(ctx context.Context, user int64, next string) (string, error) {
	if next == "" {
		return "", nil
	}
	ms, err := strconv.ParseFloat(next, 64)
	if err != nil {
		return "", fmt.Errorf("%w: a due time %q", hub.ErrRedisReply, next)
	}
	m := triggerMember(user, int64(ms), randomTag())
	ctx, cancel := hub.Detach(ctx) // it points at what is written: never abandoned halfway
	defer cancel()
	_, err = hub.Call(d.rdb, ctx, d.rdb.B().Zadd().Key(DueIndexKey(shardOf(user))).ScoreMember().ScoreMember(ms, m).Build(), hub.NoReply)
	return m, err
}

// userKeys are the keys of the delivery scripts after the inbox's.
func userKeys(user int64) []string {
	return []string{RecordsKey(user), DueKey(user), DoneKey(user)}
}

// bytes is what the claimed hand-offs hold: their items and record ids.
func (c claimed) bytes() int64 {
	var n int64
	for _, h := range c.handoffs {
		for _, it := range h.items {
			n += int64(len(it))
		}
		for _, id := range h.ids {
			n += int64(len(id))
		}
	}
	return n
}

// claim runs lua/delivery_claim.lua for user, taking at most items.
func (d *Delivery) claim(ctx context.Context, user int64, token, quietEnd string, items int) (claimed, error) {
	keys := append(d.items.Keys(user), append(userKeys(user), ChannelSettingsKey(user), hub.UserOnlineKey(user))...)
	args := []string{strconv.Itoa(items), itoa(d.lease().Milliseconds()), token, quietEnd, d.capsArg,
		SentPrefix(user), DedupePrefix(user), itoa(d.coreCfg.RecordTTL.Milliseconds()), d.keysTTLArg, d.core.DeadInstances(),
		d.items.Bodies}
	arr, err := hub.Run(d.rdb, ctx, claimScript, keys, args, rueidis.RedisResult.ToArray)
	if err != nil {
		return claimed{}, err
	}
	if len(arr) < 2 {
		return claimed{}, fmt.Errorf("%w: a claim answered %d values", hub.ErrRedisReply, len(arr))
	}
	var c claimed
	c.next, _ = arr[0].ToString()
	moves, _ := arr[1].AsStrSlice()
	for i := 0; i+2 < len(moves); i += 3 {
		c.moves = append(c.moves, [3]string{moves[i], moves[i+1], moves[i+2]})
	}
	for _, m := range arr[2:] {
		parts, err := m.AsStrSlice()
		if err != nil || len(parts) < 6 {
			return claimed{}, fmt.Errorf("%w: a claimed hand-off", hub.ErrRedisReply)
		}
		attempt, _ := strconv.Atoi(parts[1])
		h := handoff{channel: parts[0], attempt: attempt, head: parts[2], ids: strings.Split(parts[3], ","),
			traces: strings.Split(parts[4], ",")}
		for _, it := range parts[5:] {
			h.items = append(h.items, json.RawMessage(it))
		}
		c.handoffs = append(c.handoffs, h)
	}
	return c, nil
}

// lease is how long a claimed hand-off is the claimer's without renewal.
func (d *Delivery) lease() time.Duration { return d.coreCfg.LockTTL }

// send hands h off, renewing its lease while the gateway holds it.
func (d *Delivery) send(ctx context.Context, user int64, token string, h handoff) answer {
	nid, _, _ := strings.Cut(h.head, "|")
	done := make(chan struct{})
	renewed := make(chan struct{})
	go func() { // owned by send: it returns only after this ends
		defer close(renewed)
		t := time.NewTicker(d.lease() / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				until := itoa(time.Now().Add(d.lease()).UnixMilli())
				if _, err := hub.Run(d.rdb, ctx, renewScript, userKeys(user)[:2], append([]string{token, until}, h.ids...), hub.NoReply); err != nil {
					d.log.WarnContext(ctx, "renewing a hand-off's lease", "user", user, "err", err)
				}
			}
		}
	}()
	var a answer
	if s := d.Senders[h.channel]; s != nil {
		a = d.pushOff(ctx, user, h, s)
	} else {
		a = d.handOff(ctx, nid+"/"+itoa(user)+"/"+h.channel, handoffBody{Channel: h.channel, UserID: user, Notifications: h.items, Attempt: h.attempt})
	}
	close(done)
	<-renewed
	return a
}

// end records how h ended and returns the user's next due time and how many
// records changed (none when the lease was lost to another instance).
func (d *Delivery) end(ctx context.Context, user int64, token string, h handoff, outcome string, again int64, code string) (string, int, error) {
	if outcome == "dead" {
		// The dead index first: listing it checks each record's state.
		cmds := make(rueidis.Commands, 0, len(h.ids))
		for _, id := range h.ids {
			cmds = append(cmds, d.rdb.B().Zadd().Key(DeadIndexKey(shardOf(user))).ScoreMember().
				ScoreMember(float64(time.Now().UnixMilli()), itoa(user)+"|"+id).Build())
		}
		if err := hub.CallMany(d.rdb, ctx, cmds); err != nil {
			return "", 0, err
		}
	}
	ctx, cancel := hub.Detach(ctx)
	defer cancel()
	args := append([]string{token, outcome, itoa(again), code, SentPrefix(user), DedupePrefix(user), d.keysTTLArg}, h.ids...)
	arr, err := hub.Run(d.rdb, ctx, endScript, userKeys(user), args, rueidis.RedisResult.ToArray)
	if err != nil {
		return "", 0, err
	}
	if len(arr) != 2 {
		return "", 0, fmt.Errorf("%w: a hand-off's end answered %d values", hub.ErrRedisReply, len(arr))
	}
	next, _ := arr[0].ToString()
	changed, _ := arr[1].AsInt64()
	return next, int(changed), nil
}
