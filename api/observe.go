package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"roomhub/hub"
	"roomhub/internal/version"
)

// observe counts and times every request by route and status and logs it. The
// path is logged without its query, so a ?token= never reaches the logs.
// A request to a traced route (see traced) is one server span (requestSpan).
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		route := routeLabel(c)
		var span trace.Span
		if traced(route) {
			span = s.requestSpan(c, route)
		}
		if err := next(c); err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		if span != nil {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= http.StatusInternalServerError {
				span.SetStatus(codes.Error, http.StatusText(status))
			}
			span.End()
		}
		set := s.hub.Metrics().Set
		set.GetOrCreateCounter(fmt.Sprintf(`http_requests_total{method=%q,route=%q,status="%d"}`,
			methodLabel(c.Request().Method), route, status)).Inc()
		set.GetOrCreateHistogram(fmt.Sprintf(`http_request_duration_seconds{route=%q}`, route)).UpdateDuration(start)
		s.log.DebugContext(c.Request().Context(), "http", "method", c.Request().Method, "route", route, "path", c.Request().URL.Path,
			"status", status, "duration", time.Since(start))
		return nil
	}
}

// requestSpan starts a request's server span and puts it in the request's
// context. Only the backend may steer the hub's tracing: on a route of the
// internal key, the caller's traceparent (and tracestate) is continued once
// its key is right; on any other route (browsers call them, and anyone
// without a credential) the request is a new root trace, sampled by the
// hub's own sampler, with the caller's context as a link at most, so
// nothing of it is followed or forwarded.
func (s *Server) requestSpan(c echo.Context, route string) trace.Span {
	r := c.Request()
	ctx := r.Context()
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", methodLabel(r.Method)), attribute.String("http.route", route))}
	caller := propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
	if internalRoute(route) && validInternalKey(r, s.cfg.InternalAPIKey) {
		ctx = caller
	} else {
		opts = append(opts, trace.WithNewRoot())
		if sc := trace.SpanContextFromContext(caller); sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc.WithTraceState(trace.TraceState{})}))
		}
	}
	ctx, span := s.hub.Tracer().Start(ctx, r.Method+" "+route, opts...)
	c.SetRequest(r.WithContext(ctx))
	return span
}

// internalRoute reports whether route is one of the internal key's: publish,
// batch and /api/v1/internal/*.
func internalRoute(route string) bool {
	return strings.HasPrefix(route, "/api/v1/notifications/publish") || strings.HasPrefix(route, "/api/v1/internal/")
}

// traced reports whether requests to route get a span: the API's, except
// the streams (a span as long as a stream tells nothing).
func traced(route string) bool {
	if route == "/dev/publish" {
		return true
	}
	return strings.HasPrefix(route, "/api/v1/") && !strings.HasSuffix(route, "/stream")
}

// methodLabel is the request method when it is a standard one, else "other":
// anyone can send any method, and each label value is a series kept forever.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// routeLabel is the route template, so that metric cardinality stays bounded.
func routeLabel(c echo.Context) string {
	p := c.Path()
	if p == "" || p == "/*" {
		return "unmatched"
	}
	return p
}

// registerHTTPMetrics lists the HTTP metrics at zero before any request.
func (s *Server) registerHTTPMetrics() {
	set := s.hub.Metrics().Set
	b := version.Get()
	set.NewGauge(fmt.Sprintf(`roomhub_build_info{version=%q,revision=%q,goversion=%q}`, b.Version, b.Revision, b.GoVersion),
		func() float64 { return 1 })
	for _, r := range s.e.Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		set.GetOrCreateCounter(fmt.Sprintf(`http_requests_total{method=%q,route=%q,status="200"}`, r.Method, r.Path))
		set.GetOrCreateHistogram(fmt.Sprintf(`http_request_duration_seconds{route=%q}`, r.Path))
	}
}

// MetricsHandler serves /metrics alone, for METRICS_ADDR (a listener the
// operator keeps private); the main port then has no /metrics.
func (s *Server) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(echo.HeaderContentType, "text/plain; version=0.0.4; charset=utf-8")
		s.hub.Metrics().Set.WritePrometheus(w)
	})
}

func (s *Server) metrics(c echo.Context) error {
	s.MetricsHandler().ServeHTTP(c.Response(), c.Request())
	return nil
}

// healthBody is /health's result: the hub's view, ingest's, and the
// version running.
type healthBody struct {
	hub.Health
	IngestLag int64  `json:"ingestLag"` // ingest entries not yet published, every partition
	Ingest    string `json:"ingest"`    // off, ok, or degraded: this instance's last ingest read failed
	Version   string `json:"version"`
}

func (s *Server) health(c echo.Context) error {
	h := s.hub.Health(c.Request().Context())
	body := healthBody{Health: h, Ingest: "off", Version: version.Version}
	if s.ingest != nil {
		body.IngestLag, body.Ingest = s.ingest.Lag(), s.ingest.Status()
	}
	// Ingest does not make an instance unhealthy: its streams serve on.
	if h.Healthy() {
		return ok(c, body)
	}
	return c.JSON(http.StatusServiceUnavailable, Envelope{
		IsSuccess: false, Code: "REDIS5001", Message: "degraded: Redis or the pub/sub listener is unavailable", Result: body,
	})
}
