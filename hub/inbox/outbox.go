package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/lua"
)

var (
	outboxTouchScript   = hub.NewScript(lua.OutboxTouch)
	zremUnchangedScript = hub.NewScript(lua.ZremUnchanged)
)

// outboxSweepRooms bounds the rooms one sweep visits.
const outboxSweepRooms = 1000

// touchOutboxRoom lists room in outbox:rooms before a publish with recipients,
// so that the sweep can find its outbox entry should this instance die.
func (ib *Inbox) touchOutboxRoom(ctx context.Context, room int64) error {
	_, err := hub.Run(ib.rdb, ctx, outboxTouchScript, []string{hub.OutboxRoomsKey}, []string{itoa(room)}, hub.NoReply)
	return err
}

// runOutboxSweeper finishes inbox writes that a publishing instance left
// undone (it died between the publish and its inbox writes): every
// OutboxGrace/2, one instance (lock:outbox-sweep) looks at entries older than
// OutboxGrace.
func (ib *Inbox) runOutboxSweeper(ctx context.Context) {
	ib.core.EveryUnderLock(ctx, "outbox-sweep", max(ib.cfg.OutboxGrace/2, 10*time.Millisecond), func(ctx context.Context) (time.Duration, error) {
		return 0, ib.sweepOutbox(ctx)
	})
}

// sweepOutbox finishes the old entries of every listed room and unlists rooms
// left with none.
func (ib *Inbox) sweepOutbox(ctx context.Context) error {
	now, err := hub.Call(ib.rdb, ctx, ib.rdb.B().Time().Build(), rueidis.RedisResult.AsStrSlice)
	if err != nil {
		return err
	}
	if len(now) != 2 {
		return fmt.Errorf("%w: TIME answered %d values", hub.ErrRedisReply, len(now))
	}
	secs, _ := strconv.ParseInt(now[0], 10, 64)
	micros, _ := strconv.ParseInt(now[1], 10, 64)
	cutoff := secs*1000 + micros/1000 - ib.cfg.OutboxGrace.Milliseconds()
	rooms, err := hub.Call(ib.rdb, ctx, ib.rdb.B().Zrange().Key(hub.OutboxRoomsKey).Min("0").Max(itoa(outboxSweepRooms-1)).Withscores().Build(),
		rueidis.RedisResult.AsZScores)
	if err != nil {
		return err
	}
	for _, z := range rooms {
		room, ok := hub.ParseID(z.Member)
		if !ok {
			continue
		}
		left, err := ib.sweepOutboxRoom(ctx, room, cutoff)
		if err != nil {
			return err
		}
		if left == 0 && int64(z.Score) < cutoff {
			score := itoa(int64(z.Score))
			if _, err := hub.Run(ib.rdb, ctx, zremUnchangedScript, []string{hub.OutboxRoomsKey}, []string{z.Member, score}, hub.NoReply); err != nil {
				return err
			}
		}
	}
	return nil
}

// sweepOutboxRoom finishes room's outbox entries older than cutoff (ms) and
// returns how many entries remain.
func (ib *Inbox) sweepOutboxRoom(ctx context.Context, room, cutoff int64) (int, error) {
	entries, err := hub.Call(ib.rdb, ctx, ib.rdb.B().Hgetall().Key(hub.OutboxKey(room)).Build(), rueidis.RedisResult.AsStrMap)
	if err != nil {
		return 0, err
	}
	left := len(entries)
	for sid, v := range entries {
		msPart, note, _ := strings.Cut(v, "\n")
		ms, _ := strconv.ParseInt(msPart, 10, 64)
		if ms >= cutoff {
			continue // its publisher may still be at work
		}
		if err := ib.finishOutboxEntry(ctx, room, sid, note); err != nil {
			return left, err
		}
		left--
	}
	return left, nil
}

// finishOutboxEntry does an entry's inbox writes from the event in history.
// An event already trimmed from history cannot be rebuilt: the entry is
// dropped, with a warning.
func (ib *Inbox) finishOutboxEntry(ctx context.Context, room int64, sid, note string) error {
	id, err := hub.ParseStreamID(sid)
	recipients, topic, exclude := parseNote(note)
	if err == nil && (len(recipients) > 0 || topic != "") {
		ev, rerr := ib.core.EventAt(ctx, room, id)
		switch {
		case rerr == nil:
			n := notice{room: room, id: id, typ: ev.Type, data: ev.Data, publisher: ev.PublisherID, ts: ev.Timestamp}
			if ev.Extra != "" {
				if err := json.Unmarshal([]byte(ev.Extra), &n.opts); err != nil {
					ib.log.Warn("an outbox entry's options are unreadable; its items get none", "room", room, "id", sid, "err", err)
				}
			}
			if _, err := ib.finish(ctx, n, recipients, topic, exclude); err != nil {
				return err
			}
			ib.metrics.outboxRecovered.Inc()
			ib.log.Info("finished inbox writes a publisher left undone", "room", room, "id", sid, "recipients", len(recipients), "topic", topic)
			return nil
		case !errors.Is(rerr, hub.ErrNotFound):
			return rerr
		}
	}
	ib.log.Warn("dropping an outbox entry whose event is gone", "room", room, "id", sid)
	if _, err := hub.Call(ib.rdb, ctx, ib.rdb.B().Hdel().Key(hub.OutboxKey(room)).Field(sid).Build(), hub.NoReply); err != nil {
		return err
	}
	return nil
}
