package api

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"roomhub/hub"
)

var keepaliveFrame = []byte(":keepalive\n\n")

// joinWait bounds the Redis work a stream does before it answers.
const joinWait = 2 * time.Second

// sseWriter writes SSE bytes with a deadline per write, so a stalled socket is
// dropped instead of waited on. It also tells a slow client from a busy hub:
// a write that blocked for slow while events were being dropped (dropped
// reports it) means the socket will not take bytes, and it fails with
// hub.ErrLagged. Drops alone only make the stream catch up from history.
type sseWriter struct {
	w       *echo.Response
	rc      *http.ResponseController
	timeout time.Duration
	slow    time.Duration
	dropped func() bool
}

// begin sets the write deadline of one write or flush and returns its start.
func (w *sseWriter) begin() (time.Time, error) {
	now := time.Now()
	if err := w.rc.SetWriteDeadline(now.Add(w.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return now, err
	}
	return now, nil
}

// end judges a write or flush that began at start and ended with err.
func (w *sseWriter) end(start time.Time, err error) error {
	if err != nil {
		return err
	}
	if time.Since(start) >= w.slow && w.dropped != nil && w.dropped() {
		return hub.ErrLagged
	}
	return nil
}

func (w *sseWriter) write(b []byte) error {
	start, err := w.begin()
	if err != nil {
		return err
	}
	_, err = w.w.Write(b)
	return w.end(start, err)
}

func (w *sseWriter) flush() error {
	start, err := w.begin()
	if err != nil {
		return err
	}
	return w.end(start, w.rc.Flush())
}

// send writes one frame and flushes it.
func (w *sseWriter) send(b []byte) error {
	if err := w.write(b); err != nil {
		return err
	}
	return w.flush()
}

// resumePoint is the client's Last-Event-ID header, else the lastEventId query.
func resumePoint(c echo.Context) string {
	if id := c.Request().Header.Get("Last-Event-ID"); id != "" {
		return id
	}
	return c.QueryParam("lastEventId")
}

// stream serves GET /api/v1/rooms/:roomId/stream: subscribe, catch up from the
// resume point, then live events until the client leaves, its token expires,
// it is too slow, it is evicted, or the hub shuts down.
func (s *Server) stream(c echo.Context) error {
	room, err := roomParam(c)
	if err != nil {
		return err
	}
	u := userOf(c)
	st, err := s.hub.OpenStream(room, u.ID, resumePoint(c))
	if err != nil {
		return err
	}
	defer st.Close()
	s.join(c, st)
	return s.serveStream(c, st, u, nil)
}

// userStream serves GET /api/v1/notifications/stream: the user's own
// notifications, opened by notification.unread {count}, then catch-up and
// live exactly as a room stream.
func (s *Server) userStream(c echo.Context) error {
	u := userOf(c)
	st, err := s.hub.OpenUserStream(u.ID, resumePoint(c))
	if err != nil {
		return err
	}
	defer st.Close()
	s.join(c, st)
	// Read after subscribing: what changes the count from now on arrives as
	// an event carrying the new count.
	ctx, cancel := context.WithTimeout(c.Request().Context(), joinWait)
	n, err := s.hub.Unread(ctx, u.ID)
	cancel()
	if err != nil {
		return err
	}
	return s.serveStream(c, st, u, hub.SystemFrame(hub.NotificationUnreadType, map[string]int64{"count": n}))
}

// join readies a stream before it answers: its topic knows its position and
// its user is counted (and present in the room), so both hold from the
// client's first byte on. Bounded, so that a slow or absent Redis delays the
// answer by at most joinWait.
func (s *Server) join(c echo.Context, st *hub.Stream) {
	jctx, cancel := context.WithTimeout(c.Request().Context(), joinWait)
	defer cancel()
	st.WaitReady(jctx)
	st.Join(jctx)
}

// serveStream answers with the SSE headers and retry:, writes first (if any),
// catches up from the resume point, then sends live events until the stream
// ends.
func (s *Server) serveStream(c echo.Context, st *hub.Stream, u User, first []byte) error {
	res := c.Response()
	rc := http.NewResponseController(res.Writer)
	// The server's ReadTimeout would end a long-lived stream: lift it here.
	_ = rc.SetReadDeadline(time.Time{})
	h := res.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("X-Accel-Buffering", "no")
	res.WriteHeader(http.StatusOK)
	w := &sseWriter{w: res, rc: rc, timeout: s.cfg.WriteTimeout, slow: s.cfg.SlowWrite, dropped: st.IsBehind}
	hello := []byte("retry: " + strconv.FormatInt(s.cfg.Retry.Milliseconds(), 10) + "\n\n")
	if err := w.send(append(hello, first...)); err != nil {
		return nil
	}

	ctx := c.Request().Context()
	writeEvent := func(ev *hub.Event) error { return w.write(ev.Frame()) }
	// ended reports whether err ends the stream, telling a lagged client so.
	ended := func(err error) bool {
		if errors.Is(err, hub.ErrLagged) {
			s.lagged(w)
		} else if err != nil {
			s.log.Debug("stream ended", "room", st.Room, "user", u.ID, "err", err)
		}
		return err != nil
	}
	catchUp := func() error {
		if err := st.CatchUp(ctx, writeEvent); err != nil {
			return err
		}
		return w.flush()
	}
	if ended(catchUp()) {
		return nil
	}

	keepalive := time.NewTimer(s.cfg.KeepAlive)
	defer keepalive.Stop()
	expiry := time.NewTimer(time.Until(u.Expires))
	defer expiry.Stop()
	refresh := time.NewTicker(s.hub.RefreshEvery())
	defer refresh.Stop()
	var recheck <-chan time.Time // proxy mode: is the user still allowed in the room?
	if every := s.hub.RecheckEvery(); every > 0 && st.Room > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		recheck = t.C
	}
	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case <-s.hub.Done():
			s.endForShutdown(ctx, w)
			return nil
		case <-expiry.C:
			return nil
		case <-st.Evicted():
			_ = w.send(hub.SystemFrame(hub.EvictedEventType, map[string]string{"reason": "connection limit"}))
			return nil
		case <-st.Behind():
			err = catchUp()
		case ev := <-st.Events():
			err = sendBatch(w, st, ev, catchUp)
		case <-refresh.C:
			st.Refresh(ctx)
			continue
		case <-recheck:
			// A backend that cannot answer keeps the stream: it is asked again next time.
			if errors.Is(s.hub.CheckRoom(ctx, u.ID, u.Grant, st.Room), hub.ErrForbidden) {
				_ = w.send(hub.SystemFrame(hub.EvictedEventType, map[string]string{"reason": "access revoked"}))
				return nil
			}
			continue
		case <-keepalive.C:
			err = w.send(keepaliveFrame)
		}
		if ended(err) {
			return nil
		}
		keepalive.Reset(s.cfg.KeepAlive)
	}
}

// sendBatch writes ev and whatever else is already buffered, then flushes once.
// Events dropped meanwhile, or a seq jump, make the stream catch up from
// history. ev itself came before anything dropped, so it is sent first: a
// stream that has sent nothing yet has no position to re-read it from.
func sendBatch(w *sseWriter, st *hub.Stream, ev *hub.Event, catchUp func() error) error {
	for {
		send, needCatchUp := st.Accept(ev)
		if send {
			if err := w.write(ev.Frame()); err != nil {
				return err
			}
		}
		if needCatchUp || st.IsBehind() {
			if err := w.flush(); err != nil {
				return err
			}
			return catchUp()
		}
		select {
		case ev = <-st.Events():
		default:
			return w.flush()
		}
	}
}

// endForShutdown ends a stream when the instance stops: after a random part of
// ShutdownSpread, with a retry: of its own between 1× and 2× SSE_RETRY_MS,
// so that a thousand browsers do not reconnect to the other instances in the
// same millisecond. They resume from their Last-Event-ID.
func (s *Server) endForShutdown(ctx context.Context, w *sseWriter) {
	if spread := s.cfg.ShutdownSpread; spread > 0 {
		t := time.NewTimer(rand.N(spread))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
	retry := s.cfg.Retry + rand.N(s.cfg.Retry+1)
	_ = w.send([]byte("retry: " + strconv.FormatInt(retry.Milliseconds(), 10) + "\n\n"))
}

func (s *Server) lagged(w *sseWriter) {
	w.dropped = nil // the last frame is written whatever the socket's pace
	_ = w.send(hub.SystemFrame(hub.LaggedEventType, map[string]string{"reason": "client too slow; reconnect with Last-Event-ID"}))
}
