// Package fcm is the hub's own Firebase Cloud Messaging sender, the
// built-in delivery channel "fcm": FCM HTTP v1 (messages:send), one request
// per device token, authorized by an OAuth 2 access token that the service
// account's key buys at its token_uri (golang.org/x/oauth2's JWT-bearer
// grant), one per instance, kept until 5 minutes before it expires.
//
// A message carries the inbox item's face, its data, Android's priority,
// TTL and collapse key, and iOS's badge (the person's exact unread count)
// and thread. FCM's answers are named with its own MessagingErrorCodes
// (seed 002); a gone token's device is removed.
package fcm

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"golang.org/x/oauth2/jwt"

	"roomhub/hub"
	"roomhub/hub/push"
)

// Scope is the OAuth 2 scope of FCM's HTTP v1 API.
const Scope = "https://www.googleapis.com/auth/firebase.messaging"

// Service is the fcm channel: the key's access tokens, the users' devices
// and the pushes to them. Its Push is the channel's delivery.Sender.
type Service struct {
	phones  *push.Phones
	send    string // the messages:send URL
	client  *http.Client
	gate    *push.Gate
	tokens  *tokens
	timeout time.Duration
}

// key is what the hub reads of a service account key besides what
// google.JWTConfigFromJSON does.
type key struct {
	Type      string `json:"type"`
	ProjectID string `json:"project_id"`
}

// parse reads FCM_CREDENTIALS: the key's JWT config and its project (or
// FCM_PROJECT_ID). A bad one is a *hub.ConfigError naming the variable.
func (cfg Config) parse() (*jwt.Config, string, error) {
	bad := func(reason string) error {
		return &hub.ConfigError{Var: "FCM_CREDENTIALS", Value: "(hidden)", Reason: reason}
	}
	raw, err := push.ReadSecret(cfg.Credentials)
	if err != nil {
		return nil, "", bad("a service account key's JSON: " + err.Error())
	}
	var k key
	if err := json.Unmarshal(raw, &k); err != nil || k.Type != "service_account" {
		return nil, "", bad(`not a service account key (its JSON's "type" is "service_account")`)
	}
	conf, err := google.JWTConfigFromJSON(raw, Scope)
	if err != nil {
		return nil, "", bad(err.Error())
	}
	if conf.TokenURL == "" || conf.Email == "" {
		return nil, "", bad("the key has no token_uri or client_email")
	}
	project := cmpOr(cfg.ProjectID, k.ProjectID)
	if project == "" {
		return nil, "", &hub.ConfigError{Var: "FCM_PROJECT_ID", Value: "", Reason: "the key names no project_id: set FCM_PROJECT_ID"}
	}
	return conf, project, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// New is the fcm channel of cfg on core, each push within timeout
// (delivery's hand-off limit), sending to devices'
// tokens with badge's unread counts. tlsConf (nil: the system's roots) is
// for tests that stand up FCM and its token endpoint.
func New(core *hub.Hub, cfg Config, timeout time.Duration, log *slog.Logger, devices *push.Devices, badge push.Badge, tlsConf *tls.Config) (*Service, error) {
	conf, project, err := cfg.parse()
	if err != nil {
		return nil, err
	}
	client := push.NewClient(timeout, tlsConf, nil)
	return &Service{
		phones: push.NewPhones(core, log, push.FCMChannel, devices, badge), client: client, timeout: timeout,
		send:   strings.TrimRight(cfg.BaseURL, "/") + "/v1/projects/" + project + "/messages:send",
		gate:   push.NewGate(push.MaxInFlight, push.MaxPerOrigin, time.Now),
		tokens: newTokens(conf, client),
	}, nil
}

// Close lets the idle connections go.
func (s *Service) Close() { s.client.CloseIdleConnections() }

// Push sends a hand-off's items to each of user's enabled FCM devices at
// once and answers each; a device FCM says is gone (UNREGISTERED,
// SENDER_ID_MISMATCH) is removed.
func (s *Service) Push(ctx context.Context, user int64, items []json.RawMessage) ([]push.Answer, error) {
	return s.phones.Push(ctx, user, items, func(ctx context.Context, d push.Device, m push.Message) push.Answer {
		return s.sendOne(ctx, d.Token, m.Face, m.Badge)
	})
}

// sendOne sends one message to token within the hand-off's time and the
// gate's bounds. An access token FCM refuses (401) is made again and the
// push sent once more at once.
func (s *Service) sendOne(ctx context.Context, token string, f push.Face, badge int) push.Answer {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	pass, wait := s.gate.Enter(s.send, false)
	if !wait.IsZero() {
		return push.Answer{Wait: wait}
	}
	body, err := json.Marshal(messageOf(token, f, badge, time.Now()))
	if err != nil {
		s.gate.Leave(pass, false, false, "")
		return push.Answer{Code: "INVALID_ARGUMENT"}
	}
	a, renew := s.post(ctx, body, false)
	if renew {
		a, _ = s.post(ctx, body, true)
	}
	// Only a push with no answer counts against FCM's breaker: FCM is one
	// origin for every device, and its answers about one token (INTERNAL,
	// QUOTA_EXCEEDED…) are retried by the delivery's backoff.
	s.gate.Leave(pass, a.Unanswered(), false, "")
	return a
}

// post sends body with an access token and reads the answer within the
// bounds. renew: FCM refused the token (401) on a first try (not again):
// a new one was asked for, and the push is to be sent once more.
func (s *Service) post(ctx context.Context, body []byte, again bool) (a push.Answer, renew bool) {
	tok, gen, err := s.tokens.get(ctx)
	if err != nil {
		return tokenFailure(err), false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.send, bytes.NewReader(body))
	if err != nil {
		return push.Answer{Code: "INVALID_ARGUMENT"}, false
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, b, err := push.Exchange(s.client, req)
	if err != nil {
		return push.NoAnswer(err), false
	}
	a = answerOf(resp.StatusCode, resp.Header.Get("Retry-After"), b, time.Now())
	// A 401 about the device (THIRD_PARTY_AUTH_ERROR: its APNs or Web Push
	// credential at Firebase) says nothing of the access token: kept.
	if resp.StatusCode == http.StatusUnauthorized && a.Code != "THIRD_PARTY_AUTH_ERROR" && !again {
		s.tokens.renew(gen)
		return push.Answer{}, true
	}
	return a, false
}

// tokenFailure is the answer of a push with no access token: the token
// endpoint refused the key (THIRD_PARTY_AUTH_ERROR, permanent: the key is
// wrong or revoked), or did not answer, within the push's time too
// (UNAVAILABLE, retried).
func tokenFailure(err error) push.Answer {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode >= 400 && re.Response.StatusCode < 500 {
		return push.Answer{Code: "THIRD_PARTY_AUTH_ERROR"}
	}
	if push.IsTooLarge(err) {
		return push.NoAnswer(err)
	}
	return push.Answer{Code: "UNAVAILABLE", Retryable: true}
}
