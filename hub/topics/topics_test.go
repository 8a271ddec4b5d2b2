package topics_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/hub/topics"
	"roomhub/internal/testredis"
)

// newTopics is the topics on rdb, with at most max topics a person.
func newTopics(tb testing.TB, rdb rueidis.Client, max int) *topics.Topics {
	tb.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := topics.DefaultConfig()
	if max > 0 {
		cfg.PerUserMax = max
	}
	h := hub.New(hub.DefaultConfig(), rdb, log, hub.NewMetrics(nil))
	return topics.New(h, inbox.New(h, inbox.DefaultConfig(), log), cfg, log)
}

// allFollowers pages through topic's followers, limit a page.
func allFollowers(t *testing.T, tp *topics.Topics, topic string, limit int) (ids []int64, followers int64) {
	t.Helper()
	var after int64
	for pages := 0; ; pages++ {
		page, n, next, err := tp.Followers(context.Background(), topic, after, limit)
		if err != nil || pages > 10000 {
			t.Fatalf("page after %d: %v (page %d)", after, err, pages)
		}
		if len(page) > limit || (next != nil && len(page) != limit) {
			t.Fatalf("a page of %d (limit %d), next %v", len(page), limit, next)
		}
		ids, followers = append(ids, page...), n
		if next == nil {
			return ids, followers
		}
		after = *next
	}
}

// Followers are kept exactly, once each, and page out ascending: through
// follows in several calls (the chunks split), follows again, unfollows of
// followers and of strangers, down to none.
func TestTopics_FollowersAreExactAndPageAscending(t *testing.T) {
	rdb := testredis.Client(t, testredis.Start(t).Addr())
	tp := newTopics(t, rdb, 0)
	ctx, now := context.Background(), time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[int64]bool{}
	for range 5 {
		var ids []int64
		for len(ids) < 400 {
			if u := rng.Int64N(1e9) + 1; !slices.Contains(ids, u) {
				ids = append(ids, u)
			}
		}
		fresh := 0
		for _, u := range ids {
			if !want[u] {
				fresh++
			}
			want[u] = true
		}
		added, n, err := tp.Follow(ctx, "product:123", ids, now)
		if err != nil || added != int64(fresh) || n != int64(len(want)) {
			t.Fatalf("follow: added %d, followers %d, %v; want %d, %d", added, n, err, fresh, len(want))
		}
	}
	if chunks, _ := testredis.Do(t, rdb, "HLEN", topics.FollowersKey("product:123")).AsInt64(); chunks < 10 {
		t.Fatalf("%d chunks for %d followers: the test splits none", chunks, len(want))
	}
	for _, limit := range []int{1, 7, 1000} {
		got, n := allFollowers(t, tp, "product:123", limit)
		if n != int64(len(want)) || len(got) != len(want) || !slices.IsSorted(got) {
			t.Fatalf("limit %d: %d ids (sorted %v), followers %d, want %d", limit, len(got), slices.IsSorted(got), n, len(want))
		}
		for _, u := range got {
			if !want[u] {
				t.Fatalf("limit %d: %d pages out but never followed", limit, u)
			}
		}
	}
	// Following again adds nobody; unfollowing strangers removes nobody.
	all := make([]int64, 0, len(want))
	for u := range want {
		all = append(all, u)
	}
	if added, n, err := tp.Follow(ctx, "product:123", all[:100], now); err != nil || added != 0 || n != int64(len(want)) {
		t.Fatalf("follow again: added %d, followers %d, %v", added, n, err)
	}
	if removed, _, err := tp.Unfollow(ctx, "product:123", []int64{1e12, 1e12 + 1}); err != nil || removed != 0 {
		t.Fatalf("unfollow strangers: removed %d, %v", removed, err)
	}
	for start := 0; start < len(all); start += 300 {
		part := all[start:min(start+300, len(all))]
		removed, n, err := tp.Unfollow(ctx, "product:123", part)
		if err != nil || removed != int64(len(part)) || n != int64(len(all)-start-len(part)) {
			t.Fatalf("unfollow: removed %d, followers %d, %v", removed, n, err)
		}
	}
	if got, n := allFollowers(t, tp, "product:123", 100); len(got) != 0 || n != 0 {
		t.Fatalf("after unfollowing all: %v, %d", got, n)
	}
	for _, k := range []string{topics.FollowersKey("product:123"), topics.IndexKey("product:123")} {
		if n, _ := testredis.Do(t, rdb, "EXISTS", k).AsInt64(); n != 0 {
			t.Errorf("%s is left behind", k)
		}
	}
	if n, _ := testredis.Do(t, rdb, "HLEN", topics.UserKey(all[0])).AsInt64(); n != 0 {
		t.Errorf("the person's list still holds the topic")
	}
}

// A follower keeps the seq and time of their first follow; one who follows
// after a publish is later than it, even once the topic was empty between.
func TestTopics_AFollowKeepsItsFirstSeqAndTime(t *testing.T) {
	rdb := testredis.Client(t, testredis.Start(t).Addr())
	tp := newTopics(t, rdb, 0)
	ctx := context.Background()
	first := time.UnixMilli(1765000000000)
	if _, _, err := tp.Follow(ctx, "issue:42", []int64{7, 8}, first); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tp.Follow(ctx, "issue:42", []int64{8, 9}, first.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	chunk := followerChunks(t, rdb, "issue:42")
	if chunk != "7:1,8:2,9:3" {
		t.Fatalf("the followers and their seqs: %q, want 7:1,8:2,9:3", chunk)
	}
	page, _, err := tp.Of(ctx, 8, "", 10)
	if err != nil || len(page) != 1 || page[0].FollowedAt != "2025-12-06T05:46:40.000Z" {
		t.Fatalf("what 8 follows: %+v, %v", page, err)
	}
	if _, _, err := tp.Unfollow(ctx, "issue:42", []int64{8}); err != nil {
		t.Fatal(err)
	}
	if chunk := followerChunks(t, rdb, "issue:42"); chunk != "7:1,9:3" {
		t.Fatalf("after 8 left: %q, want 7:1,9:3 (the others keep their seqs)", chunk)
	}
	if _, _, err := tp.Unfollow(ctx, "issue:42", []int64{7, 9}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tp.Follow(ctx, "issue:42", []int64{7}, first); err != nil {
		t.Fatal(err)
	}
	if chunk := followerChunks(t, rdb, "issue:42"); chunk != "7:4" {
		t.Fatalf("a follow after the topic was empty: %q, want 7:4", chunk)
	}
}

// followerChunks is topic's followers as the chunks keep them, joined.
func followerChunks(t *testing.T, rdb rueidis.Client, topic string) string {
	t.Helper()
	vals, err := testredis.Do(t, rdb, "HVALS", topics.FollowersKey(topic)).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(vals, "|")
}

// A follow that would take someone past TOPICS_PER_USER_MAX adds nobody and
// names the first such person; what people follow pages by key, and
// leaving takes one out of both lists.
func TestTopics_ThePerUserMaxRefusesTheWholeFollow(t *testing.T) {
	rdb := testredis.Client(t, testredis.Start(t).Addr())
	tp := newTopics(t, rdb, 2)
	ctx, now := context.Background(), time.Now()
	for _, topic := range []string{"b", "a"} {
		if _, _, err := tp.Follow(ctx, topic, []int64{5}, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := tp.Follow(ctx, "a", []int64{5, 6}, now); err != nil { // 5 follows a already
		t.Fatalf("following again is no new topic: %v", err)
	}
	_, _, err := tp.Follow(ctx, "c", []int64{6, 5, 7}, now)
	var full *topics.FullError
	if !errors.As(err, &full) || full.User != 5 {
		t.Fatalf("past the max: %v, want a FullError naming 5", err)
	}
	for _, u := range []int64{6, 7} {
		if page, _, _ := tp.Of(ctx, u, "", 10); slices.ContainsFunc(page, func(f topics.Followed) bool { return f.TopicKey == "c" }) {
			t.Fatalf("%d follows c after a refused follow", u)
		}
	}
	if ids, n, _, _ := tp.Followers(ctx, "c", 0, 10); len(ids) != 0 || n != 0 {
		t.Fatalf("c's followers after a refused follow: %v, %d", ids, n)
	}
	page, next, err := tp.Of(ctx, 5, "", 1)
	if err != nil || len(page) != 1 || page[0].TopicKey != "a" || next == nil || *next != "a" {
		t.Fatalf("5's first page: %+v, next %v, %v", page, next, err)
	}
	if page, next, _ = tp.Of(ctx, 5, *next, 1); len(page) != 1 || page[0].TopicKey != "b" || next != nil {
		t.Fatalf("5's second page: %+v, next %v", page, next)
	}
	if removed, err := tp.Leave(ctx, 5, "a"); err != nil || removed != 1 {
		t.Fatalf("leave: %d, %v", removed, err)
	}
	if removed, _ := tp.Leave(ctx, 5, "a"); removed != 0 {
		t.Fatalf("leave again: %d", removed)
	}
	if ids, n, _, _ := tp.Followers(ctx, "a", 0, 10); !slices.Equal(ids, []int64{6}) || n != 1 {
		t.Fatalf("a's followers after 5 left: %v, %d", ids, n)
	}
	if _, _, err := tp.Follow(ctx, "c", []int64{5}, now); err != nil {
		t.Fatalf("after leaving one, 5 follows another: %v", err)
	}
}

// On a cluster a topic's followers and their own lists are in other slots:
// the same calls keep both.
func TestTopics_OnACluster(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t)
	rdb := testredis.Client(t, cl.Addrs()...)
	tp := newTopics(t, rdb, 0)
	ctx, now := context.Background(), time.Now()
	var ids []int64
	for u := range int64(300) {
		ids = append(ids, u*37+1)
	}
	if added, n, err := tp.Follow(ctx, "product:9", ids, now); err != nil || added != 300 || n != 300 {
		t.Fatalf("follow: %d, %d, %v", added, n, err)
	}
	if got, n := allFollowers(t, tp, "product:9", 50); len(got) != 300 || n != 300 || got[0] != 1 {
		t.Fatalf("followers: %d, %d", len(got), n)
	}
	if removed, err := tp.Leave(ctx, ids[10], "product:9"); err != nil || removed != 1 {
		t.Fatalf("leave: %d, %v", removed, err)
	}
	if page, _, err := tp.Of(ctx, ids[11], "", 10); err != nil || len(page) != 1 {
		t.Fatalf("what %d follows: %+v, %v", ids[11], page, err)
	}
}
