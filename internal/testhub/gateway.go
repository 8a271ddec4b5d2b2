package testhub

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// GatewayCall is one hand-off a test gateway received.
type GatewayCall struct {
	IdemKey, InternalKey string
	TraceParent          string // the hub's trace context, when its trace is sampled
	Body                 struct {
		Channel       string            `json:"channel"`
		UserID        int64             `json:"userId"`
		Notifications []json.RawMessage `json:"notifications"`
		Attempt       int               `json:"attempt"`
	}
	At time.Time
}

// GatewayAnswer is what a test gateway answers: a status, a body and
// headers; hang holds the request until the client gives up, wait (when
// set) runs before the answer goes out.
type GatewayAnswer struct {
	Status int
	Body   string
	Header map[string]string
	Hang   bool
	Wait   func()
}

// Gateway is a real HTTP gateway in the test: it records every
// hand-off and answers what answer says (2xx when nil).
type Gateway struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []GatewayCall
	answer func(c GatewayCall) GatewayAnswer
	got    chan GatewayCall
}

// StartGateway starts a gateway that answers what answer says (2xx when
// nil) until the test ends.
func StartGateway(t testing.TB, answer func(c GatewayCall) GatewayAnswer) *Gateway {
	g := &Gateway{answer: answer, got: make(chan GatewayCall, 10000)}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c GatewayCall
		c.IdemKey, c.InternalKey, c.At = r.Header.Get("Idempotency-Key"), r.Header.Get("X-Internal-Key"), time.Now()
		c.TraceParent = r.Header.Get("traceparent")
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &c.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		a := GatewayAnswer{Status: http.StatusOK}
		g.mu.Lock()
		if g.answer != nil {
			a = g.answer(c)
		}
		g.calls = append(g.calls, c)
		g.mu.Unlock()
		g.got <- c
		if a.Hang {
			<-r.Context().Done()
			panic(http.ErrAbortHandler) // no answer: returning would send a 200 the hub may still read
		}
		if a.Wait != nil {
			a.Wait()
		}
		for k, v := range a.Header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.Status)
		_, _ = io.WriteString(w, a.Body)
	}))
	t.Cleanup(g.Close)
	return g
}

// StartFlippingGateway is a gateway that answers failing until the
// returned heal is called, then 200.
func StartFlippingGateway(t testing.TB, failing GatewayAnswer) (*Gateway, func()) {
	var mu sync.Mutex
	ok := false
	g := StartGateway(t, func(GatewayCall) GatewayAnswer {
		mu.Lock()
		defer mu.Unlock()
		if !ok {
			return failing
		}
		return GatewayAnswer{Status: http.StatusOK}
	})
	return g, func() { mu.Lock(); ok = true; mu.Unlock() }
}

// Next waits for the gateway's next call.
func (g *Gateway) Next(t testing.TB, d time.Duration) GatewayCall {
	t.Helper()
	select {
	case c := <-g.got:
		return c
	case <-time.After(d):
		t.Fatalf("the gateway got no hand-off within %v", d)
		return GatewayCall{}
	}
}

// Quiet asserts the gateway gets nothing for d.
func (g *Gateway) Quiet(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case c := <-g.got:
		t.Fatalf("unexpected hand-off %s attempt %d", c.IdemKey, c.Body.Attempt)
	case <-time.After(d):
	}
}

// DeliveryConfig configures channels push and email with rules, the
// gateway, and quick retries.
func DeliveryConfig(g *Gateway, rules string, more ...func(*Configs)) func(*Configs) {
	return func(c *Configs) {
		c.Delivery.Channels = []string{"push", "email"}
		c.Delivery.Rules = rules
		c.Delivery.SinkURL = g.URL
		c.Delivery.Backoff = 100 * time.Millisecond
		c.Delivery.Timeout = 2 * time.Second
		for _, m := range more {
			m(c)
		}
	}
}

// Str is *p, or "" for nil.
func Str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// Calls are the hand-offs the gateway got so far.
func (g *Gateway) Calls() []GatewayCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]GatewayCall(nil), g.calls...)
}
