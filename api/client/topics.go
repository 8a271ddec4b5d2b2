package client

import (
	"context"
	"net/url"
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
