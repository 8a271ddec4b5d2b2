// Package client is roomhub's client for backends: publish one event or a
// batch over the internal HTTP routes, publish through the ingest streams
// on the backend's own Redis client (the partition computed, inside the
// backend's MULTI for an outbox), read deliveries and dead lists, re-drive
// them, read a room's presence, and keep topics and their fan-outs. It is a module of its own on the
// standard library alone: a backend that imports it pulls none of the hub's
// dependencies.
//
//	hub := client.New("http://roomhub.chat.svc:8083", os.Getenv("INTERNAL_API_KEY"))
//	res, err := hub.Publish(ctx, client.Event{RoomID: 42, EventType: "comment.created",
//		Data: map[string]any{"title": "Ann replied"}, RecipientIDs: []int64{7}})
//
// Its types follow api/openapi.yaml's schemas. Licensed under Apache-2.0
// (LICENSE, beside go.mod).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one hub's internal routes with the internal key.
type Client struct {
	base string
	key  string
	http *http.Client
}

// Option sets up a Client.
type Option func(*Client)

// WithHTTPClient sends the requests through a copy of c (default: a client
// with a 15 s time limit) that never follows a redirect, whatever c's
// CheckRedirect says.
func WithHTTPClient(c *http.Client) Option { return func(cl *Client) { cp := *c; cl.http = &cp } }

// New is a client of the hub at baseURL ("http://roomhub:8083") with the
// hub's INTERNAL_API_KEY. It never follows a redirect: the key and the body
// would go to wherever it points (Go resends both on a 307 or 308, and
// keeps a custom header to another host); a 3xx is an *Error naming the
// Location.
func New(baseURL, internalKey string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), key: internalKey, http: &http.Client{Timeout: 15 * time.Second}}
	for _, o := range opts {
		o(c)
	}
	c.http.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// Error is the hub's refusal: its HTTP status, code (COMMON400, NOTIF4001,
// NOTIF4091, REDIS5001…) and message.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("roomhub: %d %s: %s", e.Status, e.Code, e.Message) }

// Temporary says whether the same call may succeed later (the hub or its
// Redis was unavailable): 5xx and 429.
func (e *Error) Temporary() bool { return e.Status >= 500 || e.Status == http.StatusTooManyRequests }

// envelope is every JSON answer of the hub.
type envelope struct {
	IsSuccess bool            `json:"isSuccess"`
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Result    json.RawMessage `json:"result"`
}

// call sends method path with body (nil: none) and the internal key, and
// decodes the result into out.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	return c.send(ctx, method, path, map[string]string{"X-Internal-Key": c.key}, body, out)
}

// send sends method path with body (nil: none) and the headers hdr, and
// decodes the result into out.
func (c *Client) send(ctx context.Context, method, path string, hdr map[string]string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return &Error{Status: resp.StatusCode, Code: "REDIRECT", Message: fmt.Sprintf("the hub answered a redirect to %q: not followed (the internal key would go along); use the hub's address", resp.Header.Get("Location"))}
	}
	var env envelope
	if err := json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(&env); err != nil {
		return &Error{Status: resp.StatusCode, Code: "NOT_JSON", Message: "the answer is not the hub's JSON: " + err.Error()}
	}
	if resp.StatusCode >= 300 || !env.IsSuccess {
		return &Error{Status: resp.StatusCode, Code: env.Code, Message: env.Message}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Result, out)
}

// IsCode says whether err is the hub's refusal with code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

func query(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

func itoa(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
