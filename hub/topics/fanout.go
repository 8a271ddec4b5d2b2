package topics

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/lua"
)

var (
	snapshotScript     = hub.NewScript(lua.TopicSnapshot)
	fanoutStartScript  = hub.NewScript(lua.FanoutStart)
	fanoutCancelScript = hub.NewScript(lua.FanoutCancel)
)

// snapshotBatch bounds the ids one snapshot call looks up, and
// snapshotTries the snapshots taken while followers keep leaving between
// a snapshot's calls.
const (
	snapshotBatch = 1000
	snapshotTries = 5
)

// Fan-out states (DESIGN's Topics).
const (
	StateRunning  = "running"
	StateDone     = "done"
	StateCanceled = "canceled"
)

// Fanout is a topic publish's fan-out as GET /api/v1/internal/fanouts/{id}
// shows it. Reached counts the recipients whose turn came (the direct ones
// with the publish, each follower at their step): one who left the topic
// before their turn is not reached, and a fan-out may end done with
// Reached under Recipients.
type Fanout struct {
	ID             string  `json:"id"`
	TopicKey       string  `json:"topicKey"`
	NotificationID string  `json:"notificationId"`
	State          string  `json:"state"`
	Recipients     int64   `json:"recipients"`
	Reached        int64   `json:"reached"`
	StartedAt      string  `json:"startedAt"`
	FinishedAt     *string `json:"finishedAt"`
}

// Start records n's fan-out to topic's followers now (a snapshot: later
// followers get nothing), but skip (ascending, distinct), and has it run:
// the recipients, direct ones included. A repeat (a retry of a publish cut
// off after its event, the outbox sweep) answers the first's and starts
// nothing: the record is written once (lua/fanout_start.lua). It
// implements inbox.Fanouts.
func (t *Topics) Start(ctx context.Context, n inbox.Notice, topic string, skip []int64, direct int) (int64, error) {
	id := n.ID()
	snap, followers, among, err := t.snapshot(ctx, topic, skip)
	if err != nil {
		return 0, err
	}
	walked, now := followers-among, time.Now().UnixMilli()
	if walked > 0 { // listed before its record exists: a record to run is never left unlisted
		if _, err := hub.Call(t.rdb, ctx, t.rdb.B().Zadd().Key(RunningKey).Nx().ScoreMember().
			ScoreMember(float64(now), id).Build(), hub.NoReply); err != nil {
			return 0, err
		}
	}
	res, err := hub.Run(t.rdb, ctx, fanoutStartScript, []string{FanoutKey(id)}, []string{
		topic, strconv.FormatInt(snap, 10), strconv.FormatInt(walked+int64(direct), 10), strconv.Itoa(direct),
		strconv.FormatInt(now, 10), n.Encode(), hub.JoinIDs(skip), boolArg(walked == 0), t.keepMs(),
	}, rueidis.RedisResult.AsIntSlice)
	if err != nil {
		return 0, err
	}
	if len(res) != 2 {
		return 0, fmt.Errorf("%w: a fan-out's start answered %d values", hub.ErrRedisReply, len(res))
	}
	if res[1] == 1 && walked > 0 {
		t.run.wake()
	}
	return res[0], nil
}

// unlist takes fan-out id off the list the runners read.
func (t *Topics) unlist(ctx context.Context, id string) error {
	_, err := hub.Call(t.rdb, ctx, t.rdb.B().Zrem().Key(RunningKey).Member(id).Build(), hub.NoReply)
	return err
}

// snapshot takes topic's numbers for a publish: its seq (snap), its
// followers, and how many of ids (ascending) follow it by snap, as of one
// moment (lua/topic_snapshot.lua).
func (t *Topics) snapshot(ctx context.Context, topic string, ids []int64) (snap, followers, among int64, err error) {
	for try := 0; try < snapshotTries; try++ {
		snapArg, diffArg := "", ""
		among = 0
		moved := false
		for start := 0; start == 0 || start < len(ids); start += snapshotBatch {
			args := []string{snapArg, diffArg}
			for _, u := range ids[start:min(start+snapshotBatch, len(ids))] {
				args = append(args, strconv.FormatInt(u, 10))
			}
			res, err := hub.Run(t.rdb, ctx, snapshotScript, topicKeys(topic), args, rueidis.RedisResult.AsIntSlice)
			if err != nil {
				return 0, 0, 0, err
			}
			if len(res) == 1 && res[0] == -1 {
				moved = true
				break
			}
			if len(res) != 3 {
				return 0, 0, 0, fmt.Errorf("%w: a topic's snapshot answered %d values", hub.ErrRedisReply, len(res))
			}
			if start == 0 {
				followers, snap = res[0], res[1]
				snapArg, diffArg = strconv.FormatInt(snap, 10), strconv.FormatInt(followers-snap, 10)
			}
			among += res[2]
		}
		if !moved {
			return snap, followers, among, nil
		}
	}
	return 0, 0, 0, fmt.Errorf("%w: topic %s's followers kept leaving while its publish was counted", hub.ErrRedis, topic)
}

// Recipients is fan-out id's recipients (0 when there is no such record).
// It implements inbox.Fanouts.
func (t *Topics) Recipients(ctx context.Context, id string) (int64, error) {
	n, err := hub.Call(t.rdb, ctx, t.rdb.B().Hget().Key(FanoutKey(id)).Field("recipients").Build(), rueidis.RedisResult.AsInt64)
	if errors.Is(err, rueidis.Nil) {
		return 0, nil
	}
	return n, err
}

// CheckFanoutID returns an error wrapping hub.ErrNotFound unless id may name
// a fan-out (a notification id, as a publish answers it).
func CheckFanoutID(id string) (string, error) {
	_, _, canonical, err := inbox.ParseNotificationID(id)
	if err != nil || canonical != id {
		return "", fmt.Errorf("%w: no fan-out %q", hub.ErrNotFound, id)
	}
	return id, nil
}

// fanoutFields are the record's fields Fanout shows, in HMGET's order.
var fanoutFields = []string{"topic", "state", "recipients", "reached", "startedAt", "finishedAt"}

// Fanout is fan-out id's progress; hub.ErrNotFound when there is none (or
// its record is gone, DELIVERY_RECORD_DAYS after it finished).
func (t *Topics) Fanout(ctx context.Context, id string) (Fanout, error) {
	if _, err := CheckFanoutID(id); err != nil {
		return Fanout{}, err
	}
	v, err := hub.Call(t.rdb, ctx, t.fanoutRead(id), rueidis.RedisResult.ToArray)
	if err != nil {
		return Fanout{}, err
	}
	return readFanout(id, v)
}

// fanoutRead reads fan-out id's record (fanoutFields).
func (t *Topics) fanoutRead(id string) rueidis.Completed {
	return t.rdb.B().Hmget().Key(FanoutKey(id)).Field(fanoutFields...).Build()
}

// readFanout is fan-out id from its record's fields (fanoutRead's answer);
// hub.ErrNotFound when it has none.
func readFanout(id string, v []rueidis.RedisMessage) (Fanout, error) {
	s := make([]string, len(fanoutFields))
	for i := range min(len(v), len(s)) {
		s[i], _ = v[i].ToString() // nil: ""
	}
	if s[1] == "" {
		return Fanout{}, fmt.Errorf("%w: no fan-out %q", hub.ErrNotFound, id)
	}
	f := Fanout{ID: id, TopicKey: s[0], NotificationID: id, State: s[1], StartedAt: msTimestamp(s[4])}
	f.Recipients, _ = strconv.ParseInt(s[2], 10, 64)
	f.Reached, _ = strconv.ParseInt(s[3], 10, 64)
	if s[5] != "" {
		at := msTimestamp(s[5])
		f.FinishedAt = &at
	}
	return f, nil
}

// Cancel cancels fan-out id: nobody it has not reached gets its item (a
// step under way finishes). It answers the fan-out after; one that had
// finished stays as it was.
func (t *Topics) Cancel(ctx context.Context, id string) (Fanout, error) {
	if _, err := CheckFanoutID(id); err != nil {
		return Fanout{}, err
	}
	state, err := hub.Run(t.rdb, ctx, fanoutCancelScript, []string{FanoutKey(id)},
		[]string{strconv.FormatInt(time.Now().UnixMilli(), 10), t.keepMs()}, rueidis.RedisResult.ToString)
	if err == nil && state == "" {
		return Fanout{}, fmt.Errorf("%w: no fan-out %q", hub.ErrNotFound, id)
	}
	if err != nil {
		return Fanout{}, err
	}
	if err := t.unlist(ctx, id); err != nil {
		return Fanout{}, err
	}
	return t.Fanout(ctx, id)
}

// keepMs is how long a finished fan-out's record is kept: DELIVERY_RECORD_DAYS.
func (t *Topics) keepMs() string { return strconv.FormatInt(t.coreCfg.RecordTTL.Milliseconds(), 10) }

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// msTimestamp is a record's time (ms, a string) as the API shows times.
func msTimestamp(ms string) string {
	n, _ := strconv.ParseInt(ms, 10, 64)
	return hub.MsTimestamp(n)
}
