package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sync/errgroup"

	"roomhub/hub"
	"roomhub/hub/inbox"
)

// joinWait bounds the Redis work a stream does before it answers.
const joinWait = 2 * time.Second

// pageAccessDeadline bounds a page stream's access checks, all of its rooms
// together (each backend call is bounded to 2 s on its own).
const pageAccessDeadline = 3 * time.Second

// resumePoint is the client's Last-Event-ID header, else the lastEventId query.
func resumePoint(c echo.Context) string {
	if id := c.Request().Header.Get("Last-Event-ID"); id != "" {
		return id
	}
	return c.QueryParam("lastEventId")
}

// streamSpec is what every stream of the request's user starts from: who,
// the resume point, when it ends (its token's expiry, or
// STREAM_MAX_LIFETIME_SECS from now, whichever comes first: a long-lived
// token does not stream forever) and its room grant.
func (s *Server) streamSpec(c echo.Context) hub.StreamSpec {
	u := userOf(c)
	ends := u.Expires
	if limit := time.Now().Add(s.cfg.StreamLifetime); limit.Before(ends) {
		ends = limit
	}
	return hub.StreamSpec{User: u.ID, Resume: resumePoint(c), Expires: ends, Grant: u.Grant}
}

// stream serves GET /api/v1/rooms/:roomId/stream (access was checked by the
// roomAccess middleware).
func (s *Server) stream(c echo.Context) error {
	room, err := roomParam(c)
	if err != nil {
		return err
	}
	spec := s.streamSpec(c)
	spec.Rooms = []int64{room}
	return s.serveStream(c, spec)
}

// userStream serves GET /api/v1/notifications/stream: the user's own
// notifications, opened by notification.unread {count}.
func (s *Server) userStream(c echo.Context) error {
	spec := s.streamSpec(c)
	spec.Log = true
	return s.serveStream(c, spec)
}

// pageStream serves GET /api/v1/stream?rooms=42,43&notifications=true: several
// rooms and the user's notifications on one connection.
func (s *Server) pageStream(c echo.Context) error {
	rooms, err := parseRoomList(c.QueryParam("rooms"), s.cfg.StreamMaxRooms)
	if err != nil {
		return err
	}
	var notifications bool
	if v, set := c.QueryParams()["notifications"]; set {
		switch {
		case len(v) == 1 && v[0] == "false":
		case len(v) == 1 && v[0] == "true":
			notifications = true
		default:
			return errBadRequest(`notifications must be "true" or "false"`)
		}
	}
	if len(rooms) == 0 && !notifications {
		return errBadRequest("a page stream needs rooms, notifications=true, or both")
	}
	spec := s.streamSpec(c)
	if err := s.spendMisses(c, spec.User, rooms...); err != nil {
		return err
	}
	// Every room's access at once, under one deadline: a proxy backend's 2 s
	// a room must not add up over 32 rooms. The first refused room in the
	// request's order is the one the answer names.
	ctx, cancel := context.WithTimeout(c.Request().Context(), pageAccessDeadline)
	errs := make([]error, len(rooms))
	var g errgroup.Group
	for i, room := range rooms {
		g.Go(func() error {
			errs[i] = s.hub.CheckRoom(ctx, spec.User, spec.Grant, room)
			return nil
		})
	}
	_ = g.Wait() // each room's answer is in errs
	cancel()
	for _, err := range errs {
		if errors.Is(err, context.DeadlineExceeded) && c.Request().Context().Err() == nil {
			return fmt.Errorf("%w: the access checks took longer than %v", hub.ErrAccessUnavailable, pageAccessDeadline)
		}
		if err != nil {
			return err
		}
	}
	spec.Rooms, spec.Log, spec.Page = rooms, notifications, true
	return s.serveStream(c, spec)
}

// parseRoomList parses the rooms query: comma-separated room ids, repeats
// dropped, at most max of them; "" is no room.
func parseRoomList(raw string, max int) ([]int64, error) {
	if raw == "" {
		return nil, nil
	}
	if len(raw) > max*21 { // no more than max 20-digit ids and their commas
		return nil, errBadRequest("rooms lists more than " + strconv.Itoa(max) + " rooms")
	}
	var rooms []int64
	seen := map[int64]bool{}
	for _, part := range strings.Split(raw, ",") {
		id, err := hub.ParseRoomID(part)
		if err != nil {
			return nil, errBadRequest("rooms must be comma-separated positive 64-bit room ids")
		}
		if !seen[id] {
			seen[id] = true
			rooms = append(rooms, id)
		}
	}
	if len(rooms) > max {
		return nil, errBadRequest("rooms lists more than " + strconv.Itoa(max) + " rooms")
	}
	return rooms, nil
}

// serveStream opens the stream, joins it (bounded: a slow Redis delays the
// answer by at most joinWait), answers with the SSE headers and retry:, and
// hands the connection to the hub, which owns it from then on.
//
// A plain HTTP/1.1 connection is hijacked before the join, and the join and
// the answer run on a goroutine of the hub's: net/http's state for the
// request (its buffers, its goroutines) is let go at once, so that a storm of
// connects holds little more than the streams themselves while Redis answers.
func (s *Server) serveStream(c echo.Context, spec hub.StreamSpec) error {
	st, err := s.hub.OpenStream(spec)
	if err != nil {
		return err
	}
	started := false
	defer func() {
		if !started {
			st.Close()
		}
	}()
	hello := []byte("retry: " + strconv.FormatInt(s.core.Retry.Milliseconds(), 10) + "\n\n")
	if spec.Log {
		// Read after subscribing: what changes the count from now on arrives as
		// an event carrying the new count.
		ctx, cancel := context.WithTimeout(c.Request().Context(), joinWait)
		counts, err := s.inbox.Counts(ctx, spec.User)
		cancel()
		if err != nil {
			return err
		}
		var n struct{ Unread int64 }
		if err := json.Unmarshal(counts, &n); err != nil {
			return fmt.Errorf("%w: counts %s", hub.ErrRedisReply, counts)
		}
		hello = append(hello, hub.SystemFrame(inbox.NotificationUnreadType, map[string]int64{"count": n.Unread})...)
		hello = append(hello, hub.SystemFrame(inbox.NotificationCountsType, counts)...)
	}

	res := c.Response()
	h := res.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if w, ok := s.hijack(c); ok {
		if w == nil {
			return nil // the connection failed; it is closed
		}
		started = true
		first := append(responseHead(h), hello...)
		if !s.hub.Go(func(ctx context.Context) { s.startHijacked(ctx, st, w, first) }) {
			_ = w.Close() // the hub is closing
			st.Close()
		}
		return nil
	}
	// HTTP/2 or TLS: the handler's goroutine drives the stream.
	jctx, cancel := context.WithTimeout(c.Request().Context(), joinWait)
	st.WaitReady(jctx)
	st.Join(jctx)
	cancel()
	rc := http.NewResponseController(res.Writer)
	_ = rc.SetReadDeadline(time.Time{}) // the server's ReadTimeout would end a long-lived stream
	res.WriteHeader(http.StatusOK)
	w := &responseWire{w: res, rc: rc}
	if err := w.Write(net.Buffers{hello}, s.core.WriteTimeout); err != nil {
		return nil
	}
	started = true
	st.Serve(c.Request().Context(), w)
	return nil
}

// startHijacked joins a hijacked stream, writes its answer's head and hello
// (first) in one write, and starts it. The client's close is watched from
// the start: a stream whose client left during the join ends, and the join
// takes back what it wrote.
func (s *Server) startHijacked(ctx context.Context, st *hub.Stream, w *rawWire, first []byte) {
	w.watch(st.Close)
	jctx, cancel := context.WithTimeout(ctx, joinWait)
	st.WaitReady(jctx)
	st.Join(jctx)
	cancel()
	// One buffer: a writev would leave its iovec array on the socket's FD
	// for as long as the stream lives.
	if err := w.Write(net.Buffers{first}, s.core.WriteTimeout); err != nil {
		st.Close()
	}
	st.Start(w) // an ended stream closes the wire
}

// responseWire writes through net/http's response (HTTP/2, TLS): every write
// blocks, with a deadline, and is flushed.
type responseWire struct {
	w  *echo.Response
	rc *http.ResponseController
}

func (w *responseWire) TryWrite(net.Buffers) (int64, error) { return 0, errors.ErrUnsupported }

func (w *responseWire) Write(bufs net.Buffers, timeout time.Duration) error {
	_ = w.rc.SetWriteDeadline(time.Now().Add(timeout))
	for _, b := range bufs {
		if _, err := w.w.Write(b); err != nil {
			return err
		}
	}
	return w.rc.Flush()
}

// Close does nothing: the handler returns when the stream ends, and net/http
// ends the response.
func (w *responseWire) Close() error { return nil }

// responseHead is the start of a hijacked stream's answer: the status line and
// the headers set so far (CORS, request id, the SSE ones). The body is
// delimited by the connection's close.
func responseHead(h http.Header) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	_ = h.Write(&b)
	b.WriteString("Connection: close\r\n\r\n")
	return b.Bytes()
}
