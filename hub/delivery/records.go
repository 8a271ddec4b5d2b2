package delivery

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
)

// Record is one delivery as the backend sees it.
type Record struct {
	NotificationID string  `json:"notificationId"`
	UserID         int64   `json:"userId"`
	Channel        string  `json:"channel"`
	State          string  `json:"state"`
	Reason         *string `json:"reason"`
	DueAt          *string `json:"dueAt"`
	Attempts       int     `json:"attempts"`
	LastErrorCode  *string `json:"lastErrorCode"`
	// LastErrorAttempt is the attempt lastErrorCode came from: a sent
	// record keeps its earlier attempt's error, and says which (nil: none).
	LastErrorAttempt *int   `json:"lastErrorAttempt"`
	UpdatedAt        string `json:"updatedAt"`
}

// stored is a record as the scripts keep it (see lua/delivery_schedule.lua).
type stored struct {
	S   string  `json:"s"`
	R   string  `json:"r"`
	Due float64 `json:"due"`
	N   int     `json:"n"`
	E   string  `json:"e"`
	EA  int     `json:"ea"`
	T   float64 `json:"t"`
}

func isoMs(ms float64) string { return hub.MsTimestamp(int64(ms)) }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// record reads one stored record; ok is false when it is not one, or a
// finished one older than DELIVERY_RECORD_DAYS.
func (d *Delivery) record(user int64, rid, raw string) (Record, bool) {
	var s stored
	nid, ch, ok := strings.Cut(rid, "|")
	if !ok || json.Unmarshal([]byte(raw), &s) != nil {
		return Record{}, false
	}
	finished := s.S == "sent" || s.S == "canceled" || s.S == "skipped" || s.S == "dead"
	if finished && time.Since(time.UnixMilli(int64(s.T))) > d.coreCfg.RecordTTL {
		return Record{}, false
	}
	r := Record{NotificationID: nid, UserID: user, Channel: ch, State: s.S, Reason: optional(s.R), Attempts: s.N,
		LastErrorCode: optional(s.E), UpdatedAt: isoMs(s.T)}
	if s.E != "" && s.EA > 0 {
		ea := s.EA
		r.LastErrorAttempt = &ea
	}
	if s.Due > 0 && !finished {
		due := isoMs(s.Due)
		r.DueAt = &due
	}
	return r, true
}

// MarkNotification lists the deliveries a publish is about to schedule, so
// that the notification's records can be found: call it before the inbox
// writes (a listed delivery without a record is not shown).
func (d *Delivery) MarkNotification(ctx context.Context, room int64, streamID string, users []int64, p Plan) error {
	members := make([]string, 0, len(users)*len(p.Channels))
	for _, u := range users {
		for _, ch := range p.Channels {
			members = append(members, itoa(u)+"|"+ch)
		}
	}
	key := NotificationKey(room, streamID)
	return hub.CallMany(d.rdb, ctx, rueidis.Commands{
		d.rdb.B().Sadd().Key(key).Member(members...).Build(),
		d.rdb.B().Pexpire().Key(key).Milliseconds(d.keysTTL().Milliseconds()).Build(),
	})
}

// OfNotification returns the deliveries of a notification (its room and
// stream id), ordered by user and channel.
func (d *Delivery) OfNotification(ctx context.Context, room int64, streamID, notificationID string) ([]Record, error) {
	members, err := hub.Call(d.rdb, ctx, d.rdb.B().Smembers().Key(NotificationKey(room, streamID)).Build(), rueidis.RedisResult.AsStrSlice)
	if err != nil {
		return nil, err
	}
	type ref struct {
		user int64
		ch   string
	}
	refs := make([]ref, 0, len(members))
	for _, m := range members {
		u, ch, ok := strings.Cut(m, "|")
		if id, okID := hub.ParseID(u); ok && okID {
			refs = append(refs, ref{id, ch})
		}
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].user != refs[j].user {
			return refs[i].user < refs[j].user
		}
		return refs[i].ch < refs[j].ch
	})
	out := []Record{}
	for start := 0; start < len(refs); start += 500 {
		batch := refs[start:min(start+500, len(refs))]
		cmds := make(rueidis.Commands, len(batch))
		for i, r := range batch {
			cmds[i] = d.rdb.B().Hget().Key(RecordsKey(r.user)).Field(notificationID + "|" + r.ch).Build()
		}
		res := hub.DoMany(d.rdb, ctx, cmds)
		for i, r := range res {
			raw, err := r.ToString()
			if rueidis.IsRedisNil(err) {
				continue
			}
			if err != nil {
				return nil, hub.RedisErr(err)
			}
			if rec, ok := d.record(batch[i].user, notificationID+"|"+batch[i].ch, raw); ok {
				out = append(out, rec)
			}
		}
	}
	return out, nil
}

// deadRef is a dead index entry: "<user>|<notificationId>|<channel>" died at ms.
type deadRef struct {
	member string
	ms     float64
	user   int64
	rid    string
	ch     string
}

func parseDead(member string, ms float64) (deadRef, bool) {
	u, rid, ok := strings.Cut(member, "|")
	user, okID := hub.ParseID(u)
	_, ch, okCh := strings.Cut(rid, "|")
	return deadRef{member: member, ms: ms, user: user, rid: rid, ch: ch}, ok && okID && okCh
}

func (a deadRef) before(b deadRef) bool {
	if a.ms != b.ms {
		return a.ms < b.ms
	}
	return a.member < b.member
}

// deadCursor is where a page of dead deliveries ends (opaque to clients).
func deadCursor(r deadRef) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatFloat(r.ms, 'f', -1, 64) + "\n" + r.member))
}

func parseDeadCursor(s string) (deadRef, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return deadRef{}, fmt.Errorf("%w: after is a cursor from nextAfter", hub.ErrInvalid)
	}
	ms, member, ok := strings.Cut(string(b), "\n")
	f, err := strconv.ParseFloat(ms, 64)
	if !ok || err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return deadRef{}, fmt.Errorf("%w: after is a cursor from nextAfter", hub.ErrInvalid)
	}
	return deadRef{member: member, ms: f}, nil
}

// DeadFilter narrows dead deliveries.
type DeadFilter struct {
	Channel         string
	UserID          int64 // 0: any
	NotificationIDs map[string]bool
}

func (f DeadFilter) matches(r deadRef) bool {
	nid, _, _ := strings.Cut(r.rid, "|")
	return (f.Channel == "" || r.ch == f.Channel) && (f.UserID == 0 || r.user == f.UserID) &&
		(len(f.NotificationIDs) == 0 || f.NotificationIDs[nid])
}

// scanDead returns up to limit dead index entries after cursor (nil: from
// the first) that pass f, oldest death first, whose records are still dead,
// and whether more may follow. Entries whose record is no longer dead are
// dropped from the index on the way.
func (d *Delivery) scanDead(ctx context.Context, f DeadFilter, after *deadRef, limit int) ([]deadRef, []Record, bool, error) {
	var refs []deadRef
	var recs []Record
	cursor := after
	for {
		page, more, err := d.deadPage(ctx, cursor, limit+1)
		if err != nil {
			return nil, nil, false, err
		}
		if len(page) == 0 {
			return refs, recs, false, nil // no progress: never ask again for the same page
		}
		cursor = &page[len(page)-1]
		var matching []deadRef
		for _, r := range page {
			if f.matches(r) {
				matching = append(matching, r)
			}
		}
		pageRefs, pageRecs, err := d.deadRecords(ctx, matching)
		if err != nil {
			return nil, nil, false, err
		}
		for i, r := range pageRefs {
			if len(refs) == limit {
				return refs, recs, true, nil
			}
			refs = append(refs, r)
			recs = append(recs, pageRecs[i])
		}
		if !more {
			return refs, recs, false, nil
		}
	}
}

// deadPage merges the shards' next entries after cursor, n at most, ordered
// by (death, member), and reports whether more may follow.
func (d *Delivery) deadPage(ctx context.Context, cursor *deadRef, n int) ([]deadRef, bool, error) {
	score, member := "", ""
	if cursor != nil {
		score, member = strconv.FormatFloat(cursor.ms, 'f', -1, 64), cursor.member
	}
	execs := make([]rueidis.LuaExec, Shards)
	for s := range Shards {
		execs[s] = rueidis.LuaExec{Keys: []string{DeadIndexKey(s)}, Args: []string{score, member, strconv.Itoa(n)}}
	}
	var all []deadRef
	more := false
	for _, r := range hub.RunMany(d.rdb, ctx, zsetPageScript, execs) {
		zs, err := r.AsZScores()
		if err != nil {
			return nil, false, hub.RedisErr(err)
		}
		more = more || len(zs) == n
		for _, z := range zs {
			if ref, ok := parseDead(z.Member, z.Score); ok {
				all = append(all, ref)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].before(all[j]) })
	if len(all) > n {
		all, more = all[:n], true
	}
	return all, more, nil
}

// deadRecords reads the records of refs in one pipeline and returns those
// still dead; entries whose record is not dead any more (or is gone) leave
// the index.
func (d *Delivery) deadRecords(ctx context.Context, refs []deadRef) ([]deadRef, []Record, error) {
	if len(refs) == 0 {
		return nil, nil, nil
	}
	cmds := make(rueidis.Commands, len(refs))
	for i, r := range refs {
		cmds[i] = d.rdb.B().Hget().Key(RecordsKey(r.user)).Field(r.rid).Build()
	}
	var live []deadRef
	var recs []Record
	var stale rueidis.Commands
	for i, res := range hub.DoMany(d.rdb, ctx, cmds) {
		raw, err := res.ToString()
		if err != nil && !rueidis.IsRedisNil(err) {
			return nil, nil, hub.RedisErr(err)
		}
		r := refs[i]
		if rec, ok := d.record(r.user, r.rid, raw); ok && rec.State == "dead" {
			live, recs = append(live, r), append(recs, rec)
			continue
		}
		stale = append(stale, d.rdb.B().Zrem().Key(DeadIndexKey(shardOf(r.user))).Member(r.member).Build())
	}
	if len(stale) > 0 {
		if err := hub.CallMany(d.rdb, ctx, stale); err != nil {
			return nil, nil, err
		}
	}
	return live, recs, nil
}

// trimDead drops dead index entries older than DELIVERY_RECORD_DAYS: their
// records are gone by then, and the index must not grow for ever.
func (d *Delivery) trimDead(ctx context.Context) error {
	cutoff := "(" + itoa(time.Now().Add(-d.coreCfg.RecordTTL).UnixMilli())
	cmds := make(rueidis.Commands, Shards)
	for s := range Shards {
		cmds[s] = d.rdb.B().Zremrangebyscore().Key(DeadIndexKey(s)).Min("-inf").Max(cutoff).Build()
	}
	return hub.CallMany(d.rdb, ctx, cmds)
}

// DeadPage is a page of dead deliveries.
type DeadPage struct {
	Deliveries []Record `json:"deliveries"`
	NextAfter  *string  `json:"nextAfter"`
}

// Dead returns up to limit dead deliveries (of channel, "" for any) after
// the cursor (a previous page's nextAfter, "" for the first), in the order
// they died.
func (d *Delivery) Dead(ctx context.Context, channel string, limit int, after string) (DeadPage, error) {
	var cur *deadRef
	if after != "" {
		c, err := parseDeadCursor(after)
		if err != nil {
			return DeadPage{}, err
		}
		cur = &c
	}
	refs, recs, more, err := d.scanDead(ctx, DeadFilter{Channel: channel}, cur, limit)
	if err != nil {
		return DeadPage{}, err
	}
	page := DeadPage{Deliveries: recs}
	if page.Deliveries == nil {
		page.Deliveries = []Record{}
	}
	if more && len(refs) > 0 {
		c := deadCursor(refs[len(refs)-1])
		page.NextAfter = &c
	}
	return page, nil
}

// MaxRedrive bounds the dead deliveries one redrive requeues.
const MaxRedrive = 10000

// Redrive puts dead deliveries that pass f back as due now, at most
// MaxRedrive, and reports how many and whether more are left.
func (d *Delivery) Redrive(ctx context.Context, f DeadFilter) (int, bool, error) {
	refs, _, more, err := d.scanDead(ctx, f, nil, MaxRedrive)
	if err != nil {
		return 0, false, err
	}
	byUser := map[int64][]deadRef{}
	var users []int64
	for _, r := range refs {
		if _, ok := byUser[r.user]; !ok {
			users = append(users, r.user)
		}
		byUser[r.user] = append(byUser[r.user], r)
	}
	ctx, cancel := hub.Detach(ctx)
	defer cancel()
	requeued := 0
	for _, u := range users {
		rs := byUser[u]
		// An entry at the lease's end first: should this instance die before
		// the entry at now, the requeued records are found then.
		if _, err := d.indexNext(ctx, u, itoa(time.Now().Add(d.lease()).UnixMilli())); err != nil {
			return requeued, true, err
		}
		args := []string{d.keysTTLArg}
		members := make([]string, len(rs))
		for i, r := range rs {
			args = append(args, r.rid)
			members[i] = r.member
		}
		arr, err := hub.Run(d.rdb, ctx, redriveScript, userKeys(u), args, rueidis.RedisResult.ToArray)
		if err != nil {
			return requeued, true, err
		}
		n, _ := arr[0].AsInt64()
		next, _ := arr[1].ToString()
		requeued += int(n)
		if _, err := d.indexNext(ctx, u, next); err != nil {
			return requeued, true, err
		}
		if _, err := hub.Call(d.rdb, ctx, d.rdb.B().Zrem().Key(DeadIndexKey(shardOf(u))).Member(members...).Build(), hub.NoReply); err != nil {
			return requeued, true, err
		}
		for _, r := range rs[:n] {
			d.count(r.ch, "scheduled", "redrive")
		}
	}
	return requeued, more, nil
}
