package inbox

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/lua"
)

// The user's log: every change of a user's inbox is one entry of it, sent
// live on the user's channel by the script that made the change
// (lua/inbox_log.lua). It keeps INBOX_MAX_ENTRIES entries, each what names
// the change rather than what it carried; the core reads it back through
// ReadLog when a user stream resumes or repairs.

var inboxLogReadScript = hub.NewScript(lua.InboxLogRead)

// ReadLog returns up to count events of user's log from start (see
// hub.UserLogs), each as it was sent, but for a created item, which shows
// as it is now, with the counts of its time.
func (ib *Inbox) ReadLog(ctx context.Context, user int64, start string, count int64) ([]hub.LogEvent, int, error) {
	arr, err := hub.Run(ib.rdb, ctx, inboxLogReadScript, inboxKeys(user),
		ib.inboxArgs(user, hub.NowTimestamp(), start, strconv.FormatInt(count, 10)), rueidis.RedisResult.ToArray)
	if err != nil {
		return nil, 0, err
	}
	if len(arr) == 0 || (len(arr)-1)%4 != 0 {
		return nil, 0, fmt.Errorf("%w: the log of user %d read as %d values", hub.ErrRedisReply, user, len(arr))
	}
	looked, err := arr[0].AsInt64()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", hub.ErrRedisReply, err)
	}
	evs := make([]hub.LogEvent, 0, (len(arr)-1)/4)
	for i := 1; i < len(arr); i += 4 {
		ev, err := logEvent(arr[i : i+4])
		if err != nil {
			return nil, 0, fmt.Errorf("%w: the log of user %d: %v", hub.ErrRedisReply, user, err)
		}
		evs = append(evs, ev)
	}
	return evs, int(looked), nil
}

// logEvent reads one event of inbox_log_read.lua's answer: id, seq, type, data.
func logEvent(v []rueidis.RedisMessage) (hub.LogEvent, error) {
	var ev hub.LogEvent
	id, err := v[0].ToString()
	if err != nil {
		return ev, err
	}
	if ev.ID, err = hub.ParseStreamID(id); err != nil {
		return ev, err
	}
	if ev.Seq, err = v[1].AsInt64(); err != nil {
		return ev, err
	}
	if ev.Type, err = v[2].ToString(); err != nil {
		return ev, err
	}
	data, err := v[3].ToString()
	ev.Data = []byte(data)
	return ev, err
}
