package api

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"roomhub/hub"
	"roomhub/hub/inbox"
	"roomhub/hub/ingest"
	"roomhub/hub/publish"
	"roomhub/hub/push"
	"roomhub/hub/push/webpush"
	"roomhub/hub/topics"
)

// Server is roomhub's HTTP side: an Echo instance with every route of DESIGN.md.
type Server struct {
	hub    *hub.Hub
	inbox  *inbox.Inbox
	cfg    Config     // the HTTP side's settings
	core   hub.Config // the core's: a stream's retry: and write timeout
	log    *slog.Logger
	tokens *TokenVerifier
	web    fs.FS
	e      *echo.Echo
	poller *poller // watches hijacked streams for the client's close; nil: streams are not hijacked
	// authMisses bounds, per user, the access checks the proxy backend must
	// answer (the cache cannot).
	authMisses *userLimiter
	// userRequests is every user route's budget per user; a bulk action
	// spends from it by the items it looked at (see chargeItems).
	userRequests *userLimiter
	pipeline     *publish.Pipeline // every publish's path, whatever the door
	ingest       *ingest.Ingest    // nil: the ingest streams are not consumed here (UseIngest)
	push         *webpush.Service  // nil: the webpush channel is off (UsePush)
	devices      *push.Devices     // nil: no channel the hub sends itself is on (UseDevices)
	topics       *topics.Topics    // nil: no topics (UseTopics)
	console      *consoleSide      // nil: no console (UseConsole)
}

// New builds the HTTP handler, configured by cfg, for the realtime core h
// and the inbox ib, publishing through pipeline. web holds the demo page
// and client SDK (served at / and /static/); it may be nil.
func New(cfg Config, h *hub.Hub, ib *inbox.Inbox, pipeline *publish.Pipeline, log *slog.Logger, web fs.FS) *Server {
	s := &Server{hub: h, inbox: ib, cfg: cfg, core: h.Config(), log: log, tokens: NewTokenVerifier(cfg.JWTSecret).Expect(cfg.JWTIssuer, cfg.JWTAudience), web: web, e: echo.New(),
		authMisses: newUserLimiter(cfg.AuthMisses), userRequests: newUserLimiter(cfg.UserRequests),
		pipeline: pipeline}
	if p, err := newPoller(); err != nil {
		log.Warn("no socket poller: streams are served through net/http", "err", err)
	} else {
		s.poller = p
	}
	e := s.e
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(log)
	e.Use(s.observe, recoverJSON(log))
	if len(cfg.AllowedOrigins) > 0 {
		e.Use(middleware.CORSWithConfig(middleware.CORSConfig{
			AllowOrigins:     cfg.AllowedOrigins,
			AllowCredentials: true,
			AllowMethods:     []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions},
			AllowHeaders:     []string{echo.HeaderAuthorization, echo.HeaderContentType, "Last-Event-ID", "X-Internal-Key"},
			MaxAge:           600,
		}))
	}
	e.Use(s.bodyLimits())
	s.routes()
	s.registerHTTPMetrics()
	return s
}

// Close stops the server's own goroutine (the socket poller). Streams are the
// hub's: end them with hub.EndStreams first.
func (s *Server) Close() {
	if s.poller != nil {
		s.poller.Close()
	}
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

// NewHTTPServer wraps handler in an http.Server with timeouts that stop slow
// clients from holding connections. WriteTimeout is left to handlers: SSE
// streams set a deadline per write, other handlers are bounded by Redis timeouts.
func NewHTTPServer(addr string, handler http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

func (s *Server) routes() {
	e := s.e
	// Every user route: authenticated (failures spend their client
	// address's budget, and past it are 429; a valid token never is), then
	// a budget per user.
	perUser := limit(s.userRequests)
	ipFailures := newUserLimiter(s.cfg.IPRequests)
	perIP := unauthenticatedLimit(ipFailures, s.cfg.TrustedProxy)
	overBudget := func(r *http.Request) error { return ipFailures.peek(clientAddr(r, s.cfg.TrustedProxy), time.Now()) }
	user := chain(perIP, requireUser(s.tokens, false, nil, s.cfg.AllowedOrigins, nil), perUser)
	streamUser := chain(perIP, requireUser(s.tokens, true, s.hub, s.cfg.AllowedOrigins, overBudget), perUser)
	// A client address that keeps sending wrong internal keys gets 429: one
	// budget for the publish and /internal/ routes, apart from the user
	// routes' failures. The right key always passes.
	wrongKeys := unauthenticatedLimit(newUserLimiter(s.cfg.IPRequests), s.cfg.TrustedProxy)
	internal := chain(wrongKeys, requireInternal(s.cfg.InternalAPIKey))
	// The /internal/ routes: the key, or the operator's console's session.
	operator := chain(wrongKeys, s.operator(s.cfg.InternalAPIKey))

	e.GET("/health", s.health)
	if s.cfg.MetricsAddr == "" {
		e.GET("/metrics", s.metrics)
	}
	e.GET("/openapi.yaml", s.openAPI)

	v1 := e.Group("/api/v1")
	room := s.roomAccess
	opens := limit(newUserLimiter(s.cfg.StreamOpens))
	heartbeats := limit(newUserLimiter(s.cfg.Heartbeats))
	v1.GET("/rooms/:roomId/stream", s.stream, streamUser, opens, room)
	v1.POST("/notifications/publish", s.publishOne, internal)
	v1.POST("/notifications/publish/batch", s.publishBatch, internal)
	v1.GET("/internal/notifications/:notificationId/deliveries", s.notificationDeliveries, operator)
	v1.GET("/internal/deliveries/dead", s.deadDeliveries, operator)
	v1.POST("/internal/deliveries/redrive", s.redrive, operator)
	v1.GET("/internal/ingest/dead", s.ingestDead, operator)
	v1.GET("/internal/overview", s.overview, operator)
	v1.GET("/internal/users/:userId", s.person, operator)
	s.topicRoutes(v1, operator, user)
	v1.GET("/rooms/:roomId/events", s.events, user, room)
	v1.GET("/rooms/:roomId/presence", s.presence, user, room)
	v1.POST("/rooms/:roomId/presence/heartbeat", s.heartbeat, user, heartbeats, room)
	v1.GET("/notifications/stream", s.userStream, streamUser, opens)
	v1.GET("/stream", s.pageStream, streamUser, opens)
	v1.POST("/stream-tickets", s.streamTicket, user)
	v1.GET("/notifications/unread", s.unread, user)
	v1.GET("/notifications", s.listInbox, user)
	v1.GET("/notifications/counts", s.counts, user)
	v1.PATCH("/notifications/:notificationId/read", s.markRead, user)
	for _, a := range []string{inbox.ActionSeen, inbox.ActionArchive, inbox.ActionUnarchive, inbox.ActionSnooze, inbox.ActionUnsnooze} {
		v1.PATCH("/notifications/:notificationId/"+a, s.act(a), user)
	}
	v1.DELETE("/notifications/:notificationId", s.deleteNotification, user)
	v1.POST("/notifications/bulk", s.bulk, user)
	v1.POST("/notifications/read-all", s.markAllRead, user)
	v1.GET("/notifications/settings", s.settings, user)
	v1.PUT("/notifications/settings", s.putSettings, user)
	v1.GET("/push/vapid-public-key", s.vapidPublicKey, s.pushOn)
	v1.POST("/push/subscriptions", s.subscribePush, s.pushOn, user)
	v1.DELETE("/push/subscriptions", s.unsubscribePush, s.pushOn, user)
	v1.GET("/push/devices", s.listDevices, s.devicesOn, user)
	v1.POST("/push/devices", s.registerDevice, s.devicesOn, user)
	v1.DELETE("/push/devices", s.unregisterDevice, s.devicesOn, user)
	v1.PATCH("/push/devices/:id", s.setDeviceEnabled, s.devicesOn, user)

	// Dev routes mint tokens with the configured secret: only the dev default
	// one, so that what they mint is worthless anywhere else.
	if s.cfg.DevRoutes() {
		s.log.Warn("dev routes /dev/token and /dev/publish are mounted: JWT_SECRET is the dev default")
		e.GET("/dev/token", s.devToken)
		e.POST("/dev/publish", s.devPublish)
	}
	s.consoleRoutes(e)
	if s.web != nil {
		e.GET("/", s.index)
		static := echo.WrapHandler(http.StripPrefix("/static/", staticFiles(s.web)))
		e.GET("/static/*", static)
		e.HEAD("/static/*", static) // a CDN or a service worker's update check asks HEAD
	}
}

// demoCSP is the demo page's Content-Security-Policy: its own scripts,
// styles and API only; no inline code, no framing.
const demoCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// staticFiles serves the SDK and the demo's files with their types, a
// five-minute cache (a deploy reaches browsers soon) and nosniff.
func staticFiles(files fs.FS) http.Handler {
	fileServer := http.FileServer(http.FS(files))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "public, max-age=300")
		h.Set("X-Content-Type-Options", "nosniff")
		// Every answer carries the CSP, the HTML ones (/static/ is
		// index.html, so is /static/index.html) above all: no framing.
		h.Set("Content-Security-Policy", demoCSP)
		if strings.HasSuffix(r.URL.Path, ".d.ts") {
			h.Set("Content-Type", "text/plain; charset=utf-8") // not video/mp2t
		}
		fileServer.ServeHTTP(w, r)
	})
}

func (s *Server) index(c echo.Context) error {
	b, err := fs.ReadFile(s.web, "index.html")
	if err != nil {
		return errNotFound("no demo page")
	}
	h := c.Response().Header()
	h.Set("Content-Security-Policy", demoCSP)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	return c.HTMLBlob(http.StatusOK, b)
}

// roomParam reads :roomId, a positive 64-bit integer.
func roomParam(c echo.Context) (int64, error) {
	id, err := hub.ParseRoomID(c.Param("roomId"))
	if err != nil {
		return 0, errBadRequest("roomId must be a positive 64-bit integer")
	}
	return id, nil
}

// roomAccess lets the user use :roomId only if ROOM_AUTH says so: 403
// COMMON403 when denied, 503 AUTH5031 when the proxy backend cannot answer.
func (s *Server) roomAccess(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		room, err := roomParam(c)
		if err != nil {
			return err
		}
		u := userOf(c)
		if err := s.spendMisses(c, u.ID, room); err != nil {
			return err
		}
		if err := s.hub.CheckRoom(c.Request().Context(), u.ID, u.Grant, room); err != nil {
			return err
		}
		return next(c)
	}
}

// recoverJSON turns a panic into a logged COMMON500, never a stack trace or HTML.
func recoverJSON(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			defer func() {
				if r := recover(); r != nil {
					if r == http.ErrAbortHandler {
						panic(r)
					}
					log.Error("panic in handler", "method", c.Request().Method, "route", c.Path(), "panic", fmt.Sprint(r))
					err = &Error{http.StatusInternalServerError, "COMMON500", "internal server error", nil}
				}
			}()
			return next(c)
		}
	}
}

// bodyLimit answers 413 COMMON413 for bodies over limit bytes.
func bodyLimit(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.ContentLength > limit {
				return &Error{http.StatusRequestEntityTooLarge, "COMMON413",
					"request body is larger than " + strconv.FormatInt(limit, 10) + " bytes", nil}
			}
			r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
			return next(c)
		}
	}
}

// smallBodyMax bounds every body but a publish's (publish.MaxBody: up
// to PUBLISH_MAX_BYTES of data and 10,000 recipients with the inbox
// options; a redrive, up to 10,000 notificationIds, shares that bound).
const smallBodyMax = 64 << 10

// bodyLimits bounds each route's request body: a publish's by
// PUBLISH_MAX_BYTES + 256 KiB, a batch's by PUBLISH_MAX_BYTES × 8, a
// topic's followers by 256 KiB, any other's by 64 KiB.
func (s *Server) bodyLimits() echo.MiddlewareFunc {
	small, publishLimit := bodyLimit(smallBodyMax), bodyLimit(publish.MaxBody(s.pipeline.MaxData()))
	batch, followers := bodyLimit(s.pipeline.MaxData()*8), bodyLimit(topicsBodyMax)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		smallNext, publishNext, batchNext, followersNext := small(next), publishLimit(next), batch(next), followers(next)
		return func(c echo.Context) error {
			switch c.Path() {
			case "/api/v1/notifications/publish", "/dev/publish", "/api/v1/internal/deliveries/redrive":
				return publishNext(c)
			case "/api/v1/notifications/publish/batch":
				return batchNext(c)
			case "/api/v1/internal/topics/:topicKey/followers":
				return followersNext(c)
			}
			return smallNext(c)
		}
	}
}

// readBody reads a (limited) request body, mapping an overflow to 413.
func readBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, &Error{http.StatusRequestEntityTooLarge, "COMMON413",
			"request body is larger than " + strconv.FormatInt(tooBig.Limit, 10) + " bytes", nil}
	}
	if err != nil {
		return nil, errBadRequest("could not read the request body")
	}
	return b, nil
}
