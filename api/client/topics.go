package client

import (
	"context"
	"encoding/json"
	"net/url"
	"time"
)

// Follow makes users follow topic: how many did not before, and the
// topic's followers after (PUT /api/v1/internal/topics/{topicKey}/followers).
// Up to 10,000 distinct ids a call; when it would take someone past the
// hub's TOPICS_PER_USER_MAX it adds nobody and is a COMMON409 *Error
// naming the first such user.
func (c *Client) Follow(ctx context.Context, topic string, users []int64) (added, followers int64, err error) {
	var r struct{ Added, Followers int64 }
	err = c.call(ctx, "PUT", followersPath(topic), map[string][]int64{"userIds": users}, &r)
	return r.Added, r.Followers, err
}

// Unfollow makes users stop following topic: how many did, and the topic's
// followers after (DELETE …/followers).
func (c *Client) Unfollow(ctx context.Context, topic string, users []int64) (removed, followers int64, err error) {
	var r struct{ Removed, Followers int64 }
	err = c.call(ctx, "DELETE", followersPath(topic), map[string][]int64{"userIds": users}, &r)
	return r.Removed, r.Followers, err
}

// FollowersPage is one page of a topic's followers, ascending; Next is 0 on
// the last.
type FollowersPage struct {
	UserIDs   []int64
	Followers int64 // the topic's, all pages
	Next      int64 // the after of the next page
}

// Followers reads a page of topic's followers above after (0: from the
// first), at most limit (0: the hub's 100) (GET …/followers).
func (c *Client) Followers(ctx context.Context, topic string, after int64, limit int) (FollowersPage, error) {
	var r struct {
		UserIDs   []int64 `json:"userIds"`
		Followers int64   `json:"followers"`
		NextAfter *int64  `json:"nextAfter"`
	}
	a := ""
	if after > 0 {
		a = itoa64(after)
	}
	err := c.call(ctx, "GET", followersPath(topic)+query("after", a, "limit", itoa(limit)), nil, &r)
	p := FollowersPage{UserIDs: r.UserIDs, Followers: r.Followers}
	if r.NextAfter != nil {
		p.Next = *r.NextAfter
	}
	return p, err
}

func followersPath(topic string) string {
	return "/api/v1/internal/topics/" + url.PathEscape(topic) + "/followers"
}

// DeleteTopic deletes topic and all its followers: how many it had
// (DELETE /api/v1/internal/topics/{topicKey}). The topic reads as empty at
// once; the people's own lists are cleaned in the background.
func (c *Client) DeleteTopic(ctx context.Context, topic string) (removed int64, err error) {
	var r struct{ Removed int64 }
	err = c.call(ctx, "DELETE", "/api/v1/internal/topics/"+url.PathEscape(topic), nil, &r)
	return r.Removed, err
}

// Fan-out states.
const (
	FanoutRunning  = "running"
	FanoutDone     = "done"
	FanoutCanceled = "canceled"
)

// Fanout is a topic publish's fan-out and its progress. Reached counts the
// recipients whose turn came (one who left the topic before theirs is not
// reached); FinishedAt is zero while it runs.
type Fanout struct {
	ID             string    `json:"id"`
	TopicKey       string    `json:"topicKey"`
	NotificationID string    `json:"notificationId"`
	State          string    `json:"state"` // FanoutRunning, FanoutDone, FanoutCanceled
	Recipients     int64     `json:"recipients"`
	Reached        int64     `json:"reached"`
	StartedAt      time.Time `json:"startedAt"`
	FinishedAt     time.Time `json:"-"`
}

// UnmarshalJSON reads finishedAt, null while it runs.
func (f *Fanout) UnmarshalJSON(b []byte) error {
	type plain Fanout
	var v struct {
		plain
		FinishedAt *time.Time `json:"finishedAt"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Fanout(v.plain)
	if v.FinishedAt != nil {
		f.FinishedAt = *v.FinishedAt
	}
	return nil
}

// Fanout reads fan-out id's progress (GET /api/v1/internal/fanouts/{id});
// an unknown id is a COMMON404 *Error.
func (c *Client) Fanout(ctx context.Context, id string) (Fanout, error) {
	var f Fanout
	err := c.call(ctx, "GET", "/api/v1/internal/fanouts/"+url.PathEscape(id), nil, &f)
	return f, err
}

// CancelFanout cancels fan-out id: nobody it has not reached gets the item
// (DELETE /api/v1/internal/fanouts/{id}). It returns the fan-out after.
func (c *Client) CancelFanout(ctx context.Context, id string) (Fanout, error) {
	var f Fanout
	err := c.call(ctx, "DELETE", "/api/v1/internal/fanouts/"+url.PathEscape(id), nil, &f)
	return f, err
}
