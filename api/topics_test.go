package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"roomhub/hub/topics"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// followersPath is the followers route of topic product:123.
const followersPath = "/api/v1/internal/topics/product:123/followers"

// topicCounts is what a follow or an unfollow answers.
type topicCounts struct{ Added, Removed, Followers int64 }

// followersPage is a page of a topic's followers.
type followersPage struct {
	UserIDs   []int64
	Followers int64
	NextAfter *int64
}

// topicsHub is a hub whose people follow at most max topics (0: the
// default), the internal
// key's headers, and a call with the internal key that must answer
// wantCode (its counts when 200).
func topicsHub(t *testing.T, max int) (*testhub.Hub, map[string]string, func(method, path, body string, wantCode int) topicCounts) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) {
		c.EventTypes = append(c.EventTypes, "product.back_in_stock")
		if max > 0 {
			c.Topics.PerUserMax = max
		}
	})
	key := map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey, "Content-Type": "application/json"}
	return th, key, func(method, path, body string, wantCode int) topicCounts {
		t.Helper()
		code, env := th.Do(t, method, path, key, body)
		if code != wantCode {
			t.Fatalf("%s %s %.60s: %d %+v, want %d", method, path, body, code, env, wantCode)
		}
		var c topicCounts
		if code == 200 {
			testhub.Remarshal(t, env.Result, &c)
		}
		return c
	}
}

// The backend's follow, unfollow and pages of a topic's followers.
func TestTopics_FollowerRoutes(t *testing.T) {
	th, key, do := topicsHub(t, 0)
	const path = followersPath
	if c := do(http.MethodPut, path, `{"userIds":[3,1,2]}`, 200); c.Added != 3 || c.Followers != 3 {
		t.Fatalf("follow: %+v", c)
	}
	if c := do(http.MethodPut, path, `{"userIds":[2,4]}`, 200); c.Added != 1 || c.Followers != 4 {
		t.Fatalf("follow again: %+v", c)
	}
	var page followersPage
	code, env := th.Do(t, http.MethodGet, path+"?limit=3", key, "")
	if testhub.Remarshal(t, env.Result, &page); code != 200 || fmt.Sprint(page.UserIDs) != "[1 2 3]" || page.Followers != 4 ||
		page.NextAfter == nil || *page.NextAfter != 3 {
		t.Fatalf("first page: %d %+v", code, page)
	}
	code, env = th.Do(t, http.MethodGet, path+"?after=3&limit=3", key, "")
	page.NextAfter = nil
	if testhub.Remarshal(t, env.Result, &page); code != 200 || fmt.Sprint(page.UserIDs) != "[4]" || page.NextAfter != nil {
		t.Fatalf("second page: %d %+v", code, page)
	}
	if c := do(http.MethodDelete, path, `{"userIds":[4,5]}`, 200); c.Removed != 1 || c.Followers != 3 {
		t.Fatalf("unfollow: %+v", c)
	}
}

// Every bad input of the follower routes is a clear 400 (a body too large
// 413, no key 401) with nothing stored; 10,000 long ids fit.
func TestTopics_BadInputStoresNothing(t *testing.T) {
	th, _, do := topicsHub(t, 0)
	const path = followersPath
	ids := make([]string, 10001)
	for i := range ids {
		ids[i] = fmt.Sprint(i + 1)
	}
	for _, bad := range []struct{ path, body string }{
		{"/api/v1/internal/topics/product%20123/followers", `{"userIds":[9]}`},
		{"/api/v1/internal/topics/" + strings.Repeat("a", 129) + "/followers", `{"userIds":[9]}`},
		{path, `{"userIds":[]}`},
		{path, `{"userIds":[9,9]}`},
		{path, `{"userIds":[0]}`},
		{path, `{"userIds":[-9]}`},
		{path, `{"userIds":["9"]}`},
		{path, `{"userIds":[9.5]}`},
		{path, `{"userIds":[9],"extra":1}`},
		{path, `{}`},
		{path, ``},
		{path, `{"userIds":[` + strings.Join(ids, ",") + `]}`},
	} {
		do(http.MethodPut, bad.path, bad.body, 400)
	}
	do(http.MethodPut, path, `{"userIds":[1`+strings.Repeat(",1", 140000)+`]}`, 413)
	long := make([]string, 10000) // ~160 KB: more than other routes take
	for i := range long {
		long[i] = fmt.Sprint(100000000000000 + i)
	}
	if c := do(http.MethodPut, "/api/v1/internal/topics/big/followers", `{"userIds":[`+strings.Join(long, ",")+`]}`, 200); c.Added != 10000 {
		t.Fatalf("10,000 long ids: %+v", c)
	}
	do(http.MethodGet, path+"?after=x", "", 400)
	do(http.MethodGet, path+"?limit=0", "", 400)
	if code, _ := th.Do(t, http.MethodPut, path, map[string]string{"Content-Type": "application/json"}, `{"userIds":[9]}`); code != 401 {
		t.Fatalf("without the internal key: %d", code)
	}
	if c := do(http.MethodPut, path, `{"userIds":[1]}`, 200); c.Followers != 1 {
		t.Fatalf("after the refusals: %+v", c)
	}
}

// A follow past TOPICS_PER_USER_MAX adds nobody and names the first such
// user; a person pages what they follow and leaves a topic.
func TestTopics_PerUserMaxAndAPersonsOwnList(t *testing.T) {
	th, key, do := topicsHub(t, 2)
	const path = followersPath
	var page followersPage
	do(http.MethodPut, path, `{"userIds":[1,2,3]}`, 200)
	do(http.MethodPut, "/api/v1/internal/topics/issue:1/followers", `{"userIds":[1]}`, 200)
	code, env := th.Do(t, http.MethodPut, "/api/v1/internal/topics/issue:2/followers", key, `{"userIds":[9,1,2]}`)
	if code != 409 || env.Code != "COMMON409" || !strings.Contains(env.Message, "user 1 ") {
		t.Fatalf("past the max: %d %+v", code, env)
	}
	code, env = th.Do(t, http.MethodGet, "/api/v1/internal/topics/issue:2/followers", key, "")
	if testhub.Remarshal(t, env.Result, &page); code != 200 || len(page.UserIDs) != 0 || page.Followers != 0 {
		t.Fatalf("after the refusal: %+v", page)
	}

	// The person's own list, and leaving.
	var mine struct {
		Topics []struct {
			TopicKey, FollowedAt string
		}
		NextAfter *string
	}
	code, env = th.UserDo(t, http.MethodGet, "/api/v1/topics?limit=1", 1, "")
	if testhub.Remarshal(t, env.Result, &mine); code != 200 || len(mine.Topics) != 1 || mine.Topics[0].TopicKey != "issue:1" ||
		mine.Topics[0].FollowedAt == "" || mine.NextAfter == nil || *mine.NextAfter != "issue:1" {
		t.Fatalf("what 1 follows: %d %+v (%v)", code, mine, env.Result)
	}
	code, env = th.UserDo(t, http.MethodGet, "/api/v1/topics?after=issue:1", 1, "")
	mine.NextAfter = nil
	if testhub.Remarshal(t, env.Result, &mine); code != 200 || len(mine.Topics) != 1 ||
		mine.Topics[0].TopicKey != "product:123" || mine.NextAfter != nil {
		t.Fatalf("what 1 follows, after issue:1: %d %+v", code, mine)
	}
	for _, want := range []string{"map[removed:1]", "map[removed:0]"} { // escaped, as encodeURIComponent sends it
		if code, env := th.UserDo(t, http.MethodDelete, "/api/v1/topics/product%3A123", 1, ""); code != 200 || fmt.Sprint(env.Result) != want {
			t.Fatalf("leave: %d %+v, want %s", code, env, want)
		}
	}
	if code, _ := th.UserDo(t, http.MethodDelete, "/api/v1/topics/bad%20key", 1, ""); code != 400 {
		t.Fatalf("leave a bad key: %d", code)
	}
	code, env = th.Do(t, http.MethodGet, path, key, "")
	if testhub.Remarshal(t, env.Result, &page); code != 200 || fmt.Sprint(page.UserIDs) != "[2 3]" {
		t.Fatalf("the topic after 1 left: %+v", page)
	}
}

// Deleting a topic empties it at once, its followers' own lists are
// cleaned in the background (their other topics kept), and a follow after
// the delete is a new one that the cleaning leaves alone.
func TestTopics_Delete(t *testing.T) {
	th, key, do := topicsHub(t, 0)
	ids := make([]string, 300)
	for i := range ids {
		ids[i] = fmt.Sprint(i + 1)
	}
	do(http.MethodPut, followersPath, `{"userIds":[`+strings.Join(ids, ",")+`]}`, 200)
	do(http.MethodPut, "/api/v1/internal/topics/issue:1/followers", `{"userIds":[5]}`, 200)
	if c := do(http.MethodDelete, "/api/v1/internal/topics/product:123", "", 200); c.Removed != 300 {
		t.Fatalf("delete: %+v", c)
	}
	var page followersPage
	code, env := th.Do(t, http.MethodGet, followersPath, key, "")
	if testhub.Remarshal(t, env.Result, &page); code != 200 || len(page.UserIDs) != 0 || page.Followers != 0 {
		t.Fatalf("after the delete: %d %+v", code, page)
	}
	if c := do(http.MethodPut, followersPath, `{"userIds":[7]}`, 200); c.Added != 1 || c.Followers != 1 {
		t.Fatalf("a follow after the delete: %+v", c)
	}
	mine := func(user int64) string {
		code, env := th.UserDo(t, http.MethodGet, "/api/v1/topics", user, "")
		if code != 200 {
			t.Fatalf("%d's topics: %d %+v", user, code, env)
		}
		return fmt.Sprint(env.Result)
	}
	testhub.Eventually(t, testhub.Wait, "the people's lists to be cleaned", func() bool {
		return !strings.Contains(mine(1), "product:123") && !strings.Contains(mine(300), "product:123")
	})
	if l := mine(5); strings.Contains(l, "product:123") || !strings.Contains(l, "issue:1") {
		t.Fatalf("5 follows %s", l)
	}
	if l := mine(7); !strings.Contains(l, "product:123") {
		t.Fatalf("7 follows %s after the cleaning", l)
	}
	testhub.Eventually(t, testhub.Wait, "the trash to be gone", func() bool {
		n, _ := testredis.Do(t, th.Redis, "ZCARD", topics.TrashListKey).AsInt64()
		return n == 0
	})
	if c := do(http.MethodDelete, "/api/v1/internal/topics/nobody", "", 200); c.Removed != 0 {
		t.Fatalf("a topic nobody follows: %+v", c)
	}
	do(http.MethodDelete, "/api/v1/internal/topics/a%20b", "", 400)
}
