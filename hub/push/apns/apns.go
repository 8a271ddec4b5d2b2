// Package apns is the hub's own Apple Push Notification service sender,
// the built-in delivery channel "apns": HTTP/2 with token auth, one
// request per device token (POST /3/device/{token}), at api.push.apple.com
// or, for a device registered as a development build, its sandbox.
//
// It is written on net/http (HTTP/2 through ALPN) and golang-jwt (already
// the hub's JWT library) rather than an APNs library: the provider token's
// schedule (made again after 40 minutes, never sooner on its own, once at
// once when APNs says it expired), the answers' bounds and the dialer are
// the hub's own, as for Web Push; what is left is a request and a table of
// reasons.
package apns

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"roomhub/hub"
	"roomhub/hub/push"
)

// Service is the apns channel: the provider token, the users' devices and
// the pushes to them. Its Push is the channel's delivery.Sender.
type Service struct {
	phones  *push.Phones
	topic   string
	hosts   map[bool]string // sandbox? → the service's base URL
	client  *http.Client
	gate    *push.Gate
	tokens  *tokens
	timeout time.Duration
}

// parseKey reads APNS_PRIVATE_KEY: the .p8's PEM (a PKCS #8 P-256 key), or
// the path of the file. A bad one is a *hub.ConfigError naming the variable.
func (cfg Config) parseKey() (*ecdsa.PrivateKey, error) {
	bad := func(reason string) error {
		return &hub.ConfigError{Var: "APNS_PRIVATE_KEY", Value: "(hidden)", Reason: reason}
	}
	raw, err := push.ReadSecret(cfg.PrivateKey)
	if err != nil {
		return nil, bad("a .p8 key's PEM: " + err.Error())
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, bad("no PEM block: the .p8 file from Apple's developer account is one")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, bad("not a PKCS #8 private key: " + err.Error())
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve.Params().Name != "P-256" {
		return nil, bad("not a P-256 key (APNs signs with ES256)")
	}
	return ec, nil
}

// New is the apns channel of cfg on core, each push within timeout
// (delivery's hand-off limit), sending to devices' tokens with badge's
// unread counts. tlsConf (nil: the system's roots) is for tests that stand
// up APNs.
func New(core *hub.Hub, cfg Config, timeout time.Duration, log *slog.Logger, devices *push.Devices, badge push.Badge, tlsConf *tls.Config) (*Service, error) {
	key, err := cfg.parseKey()
	if err != nil {
		return nil, err
	}
	return &Service{
		phones: push.NewPhones(core, log, push.APNSChannel, devices, badge), topic: cfg.Topic, timeout: timeout,
		hosts:  map[bool]string{false: strings.TrimRight(cfg.BaseURL, "/"), true: strings.TrimRight(cfg.SandboxBaseURL, "/")},
		client: push.NewClient(timeout, tlsConf, nil),
		gate:   push.NewGate(push.MaxInFlight, push.MaxPerOrigin, time.Now),
		tokens: newTokens(key, cfg.KeyID, cfg.TeamID, time.Now),
	}, nil
}

// Close lets the idle connections go.
func (s *Service) Close() { s.client.CloseIdleConnections() }

// Push sends a hand-off's items to each of user's enabled APNs devices at
// once and answers each; a device APNs says is gone (Unregistered,
// BadDeviceToken, DeviceTokenNotForTopic) is removed.
func (s *Service) Push(ctx context.Context, user int64, items []json.RawMessage) ([]push.Answer, error) {
	return s.phones.Push(ctx, user, items, func(ctx context.Context, d push.Device, m push.Message) push.Answer {
		return s.sendOne(ctx, d, m.Face, payloadOf(m.Face, m.Badge))
	})
}

// sendOne sends body to device d within the hand-off's time and the gate's
// bounds. A provider token APNs calls expired or invalid is made again and
// the push sent once more at once.
func (s *Service) sendOne(ctx context.Context, d push.Device, f push.Face, body []byte) push.Answer {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	base := s.hosts[d.Environment == push.Sandbox]
	pass, wait := s.gate.Enter(base, false)
	if !wait.IsZero() {
		return push.Answer{Wait: wait}
	}
	a, renew := s.post(ctx, base, d.Token, f, body, false)
	if renew {
		a, _ = s.post(ctx, base, d.Token, f, body, true)
	}
	s.gate.Leave(pass, a.Unanswered(), false, "") // as FCM: per-token answers pause nothing
	return a
}

// post makes one request and reads its answer within the bounds. renew:
// APNs refused the provider token on a first try (not again) and another
// token is there to try (made now, or by another push since): the push is
// to be sent once more. Without one the refusal is the answer.
func (s *Service) post(ctx context.Context, base, token string, f push.Face, body []byte, again bool) (a push.Answer, renew bool) {
	jwt, err := s.tokens.get()
	if err != nil {
		return push.Answer{Code: "THIRD_PARTY_AUTH_ERROR"}, false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/3/device/"+token, bytes.NewReader(body))
	if err != nil {
		return push.Answer{Code: "INVALID_ARGUMENT"}, false
	}
	now := time.Now()
	h := req.Header
	h.Set("authorization", "bearer "+jwt)
	h.Set("apns-topic", s.topic)
	h.Set("apns-push-type", "alert")
	h.Set("apns-priority", priority(f.Severity))
	h.Set("apns-expiration", strconv.FormatInt(now.Add(f.TTL(now)).Unix(), 10))
	h.Set("content-type", "application/json")
	if id := collapseID(f.GroupKey); id != "" {
		h.Set("apns-collapse-id", id)
	}
	resp, b, err := push.Exchange(s.client, req)
	if err != nil {
		return push.NoAnswer(err), false
	}
	a, refused := answerOf(resp.StatusCode, resp.Header.Get("Retry-After"), b, now)
	if refused && !again {
		return a, s.tokens.renew(jwt) // no new token: no second try with the one refused
	}
	return a, false
}

// priority is a severity's apns-priority: 5 (sent when the phone likes)
// for low, else 10 (at once).
func priority(severity string) string {
	if severity == "low" {
		return "5"
	}
	return "10"
}
