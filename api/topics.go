package api

import (
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"roomhub/hub/topics"
)

// UseTopics serves the topic routes with t (nil: they answer 404).
func (s *Server) UseTopics(t *topics.Topics) { s.topics = t }

// topicsBodyMax bounds a body of up to topics.MaxIDs user ids.
const topicsBodyMax = 256 << 10

// topicRoutes mounts the topics' routes on v1: the backend's (internal),
// then a person's own (user).
func (s *Server) topicRoutes(v1 *echo.Group, internal, user echo.MiddlewareFunc) {
	v1.PUT("/internal/topics/:topicKey/followers", s.follow, s.topicsOn, internal)
	v1.DELETE("/internal/topics/:topicKey/followers", s.unfollow, s.topicsOn, internal)
	v1.GET("/internal/topics/:topicKey/followers", s.followers, s.topicsOn, internal)
	v1.DELETE("/internal/topics/:topicKey", s.deleteTopic, s.topicsOn, internal)
	v1.GET("/internal/fanouts", s.runningFanouts, s.topicsOn, internal)
	v1.GET("/internal/fanouts/:id", s.fanout, s.topicsOn, internal)
	v1.DELETE("/internal/fanouts/:id", s.cancelFanout, s.topicsOn, internal)
	v1.GET("/topics", s.myTopics, s.topicsOn, user)
	v1.DELETE("/topics/:topicKey", s.leaveTopic, s.topicsOn, user)
}

// topicsOn answers 404 while no topics are served.
func (s *Server) topicsOn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.topics == nil {
			return echo.ErrNotFound
		}
		return next(c)
	}
}

// topicParam is the route's topic key, unescaped (a client's
// encodeURIComponent sends ":" as %3A) and checked.
func topicParam(c echo.Context) (string, error) {
	topic, err := url.PathUnescape(c.Param("topicKey"))
	if err == nil {
		err = topics.CheckKey(topic)
	}
	if err != nil {
		return "", errBadRequest("a topic key is 1 to 128 of A-Z a-z 0-9 _ . : -")
	}
	return topic, nil
}

// followersBody is a topic and the body's user ids, checked.
func followersBody(c echo.Context) (string, []int64, error) {
	topic, err := topicParam(c)
	if err != nil {
		return "", nil, err
	}
	body, err := readBody(c)
	if err != nil {
		return "", nil, err
	}
	var req struct {
		UserIDs []int64 `json:"userIds"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return "", nil, err
	}
	if err := topics.CheckIDs(req.UserIDs); err != nil {
		return "", nil, errBadRequest(err.Error())
	}
	return topic, req.UserIDs, nil
}

// follow serves PUT /internal/topics/{topicKey}/followers {"userIds"}.
func (s *Server) follow(c echo.Context) error {
	topic, users, err := followersBody(c)
	if err != nil {
		return err
	}
	added, followers, err := s.topics.Follow(c.Request().Context(), topic, users, time.Now())
	if err != nil {
		return err
	}
	return ok(c, map[string]int64{"added": added, "followers": followers})
}

// unfollow serves DELETE /internal/topics/{topicKey}/followers {"userIds"}.
func (s *Server) unfollow(c echo.Context) error {
	topic, users, err := followersBody(c)
	if err != nil {
		return err
	}
	removed, followers, err := s.topics.Unfollow(c.Request().Context(), topic, users)
	if err != nil {
		return err
	}
	return ok(c, map[string]int64{"removed": removed, "followers": followers})
}

// followers serves GET /internal/topics/{topicKey}/followers?after=&limit=.
func (s *Server) followers(c echo.Context) error {
	topic, err := topicParam(c)
	if err != nil {
		return err
	}
	limit, err := pageSize(c, "limit", topics.DefaultPage, topics.MaxPage)
	if err != nil {
		return err
	}
	var after int64
	if v := c.QueryParam("after"); v != "" {
		if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
			return errBadRequest("after must be a user id")
		}
	}
	ids, n, next, err := s.topics.Followers(c.Request().Context(), topic, after, limit)
	if err != nil {
		return err
	}
	if ids == nil {
		ids = []int64{}
	}
	return ok(c, map[string]any{"userIds": ids, "followers": n, "nextAfter": next})
}

// myTopics serves GET /topics?after=&limit=: what the user follows.
func (s *Server) myTopics(c echo.Context) error {
	limit, err := pageSize(c, "limit", topics.DefaultPage, topics.MaxPage)
	if err != nil {
		return err
	}
	after := c.QueryParam("after")
	if after != "" {
		if err := topics.CheckKey(after); err != nil {
			return errBadRequest("after must be a topic key")
		}
	}
	page, next, err := s.topics.Of(c.Request().Context(), userOf(c).ID, after, limit)
	if err != nil {
		return err
	}
	return ok(c, map[string]any{"topics": page, "nextAfter": next})
}

// leaveTopic serves DELETE /topics/{topicKey}: the user stops following it.
func (s *Server) leaveTopic(c echo.Context) error {
	topic, err := topicParam(c)
	if err != nil {
		return err
	}
	removed, err := s.topics.Leave(c.Request().Context(), userOf(c).ID, topic)
	if err != nil {
		return err
	}
	return ok(c, map[string]int64{"removed": removed})
}

// fanoutParam is the route's fan-out id, unescaped (a notification id:
// encodeURIComponent sends ":" as %3A).
func fanoutParam(c echo.Context) string {
	id, err := url.PathUnescape(c.Param("id"))
	if err != nil {
		return ""
	}
	return id
}

// fanout serves GET /internal/fanouts/{id}: a topic publish's progress.
func (s *Server) fanout(c echo.Context) error {
	f, err := s.topics.Fanout(c.Request().Context(), fanoutParam(c))
	if err != nil {
		return err
	}
	return ok(c, f)
}

// cancelFanout serves DELETE /internal/fanouts/{id}: nobody not yet
// reached gets the item.
func (s *Server) cancelFanout(c echo.Context) error {
	f, err := s.topics.Cancel(c.Request().Context(), fanoutParam(c))
	if err != nil {
		return err
	}
	return ok(c, f)
}

// runningFanouts serves GET /internal/fanouts?topicKey=: the running
// fan-outs (of that topic), oldest first.
func (s *Server) runningFanouts(c echo.Context) error {
	topic := c.QueryParam("topicKey")
	if topic != "" {
		if err := topics.CheckKey(topic); err != nil {
			return err
		}
	}
	running, err := s.topics.Running(c.Request().Context(), topic)
	if err != nil {
		return err
	}
	return ok(c, map[string]any{"fanouts": running})
}

// deleteTopic serves DELETE /internal/topics/{topicKey}: the topic empty at
// once, the people's lists cleaned in the background.
func (s *Server) deleteTopic(c echo.Context) error {
	topic, err := topicParam(c)
	if err != nil {
		return err
	}
	removed, err := s.topics.Delete(c.Request().Context(), topic)
	if err != nil {
		return err
	}
	return ok(c, map[string]int64{"removed": removed})
}
