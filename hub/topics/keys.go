package topics

import (
	"strconv"

	"roomhub/hub"
)

// Redis key names of the topics, all in one place. A topic's keys carry
// its hash tag, {t:<topicKey>}, so that one script may touch them
// together; a person's list carries hub.UserTag.

// tag is topic's hash tag: a topic key holds no brace.
func tag(topic string) string { return "{t:" + topic + "}" }

// MetaKey is a topic's numbers: a hash, n (followers), s (the last follow's
// seq), c (the last chunk's id), dt (when it was last deleted, ms).
func MetaKey(topic string) string { return "topic:" + tag(topic) }

// IndexKey orders a topic's chunks of followers: a sorted set, chunk id
// scored by the lowest user id it holds.
func IndexKey(topic string) string { return "topic:index:" + tag(topic) }

// FollowersKey holds a topic's followers: a hash, chunk id →
// "<userId>:<seq>,…" ascending (lua/topic_lib.lua).
func FollowersKey(topic string) string { return "topic:followers:" + tag(topic) }

// topicKeys are the keys lua/topic_lib.lua takes.
func topicKeys(topic string) []string {
	return []string{MetaKey(topic), IndexKey(topic), FollowersKey(topic)}
}

// UserKey is what a person follows: a hash, topicKey → followedAt (ms).
func UserKey(user int64) string { return "topics:" + hub.UserTag(user) }

// ftag is a fan-out's hash tag: its record and lease share a slot.
func ftag(id string) string { return "{f:" + id + "}" }

// FanoutKey is a topic publish's fan-out: a hash, topic, snap (the topic's
// seq when the publish was accepted), recipients, reached, state
// (running, done, canceled), startedAt and finishedAt (ms), pos (the
// highest follower id passed), and while it runs the notice
// (inbox.Notice) and skip (the ids it passes over, comma separated). A
// finished one is kept DELIVERY_RECORD_DAYS.
func FanoutKey(id string) string { return "fanout:" + ftag(id) }

// FanoutLeaseKey is who runs a fan-out: a string, the holder, with the
// lease's TTL (LOCK_TTL_SECS).
func FanoutLeaseKey(id string) string { return "fanout:lease:" + ftag(id) }

// RunningKey lists the fan-outs to run: a sorted set, fan-out id scored by
// when it was listed (ms). Every instance's runner reads it.
const RunningKey = "fanouts:running"

// TrashKey holds a deleted topic's chunks of followers (FollowersKey's,
// renamed at ms) until the people's own lists are cleaned of it.
func TrashKey(topic string, ms int64) string {
	return "topic:trash:" + tag(topic) + ":" + strconv.FormatInt(ms, 10)
}

// TrashListKey lists the trash keys to clean: a sorted set, "<topicKey>
// <ms>" scored by ms.
const TrashListKey = "topics:trash"
