// Package testfcm is a stand-in FCM for tests: an HTTPS server that hands
// out a service account key (Key), issues access tokens at the key's
// token_uri only for an RS256 assertion signed by that key with FCM's
// scope and the token_uri as audience, unexpired (as Google's OAuth 2
// endpoint does), and takes messages:send only with a token it issued and
// has not expired, answering as the device token's script says.
package testfcm

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"roomhub/internal/standin"
)

// Project is the stand-in's project id (the key's project_id).
const Project = "roomhub-test"

// Scope is the scope an assertion must ask for.
const Scope = "https://www.googleapis.com/auth/firebase.messaging"

// Answer is one scripted answer to a message: a status and FCM's
// errorCode (none: 200), a Retry-After, or Hold (no answer until Release).
type Answer struct {
	Status     int
	ErrorCode  string
	RetryAfter string
	Hold       bool
}

// Message is one message FCM took (answered 200).
type Message struct {
	Token        string            `json:"token"`
	Notification map[string]string `json:"notification"`
	Data         map[string]string `json:"data"`
	Android      struct {
		Priority    string `json:"priority"`
		TTL         string `json:"ttl"`
		CollapseKey string `json:"collapse_key"`
	} `json:"android"`
	APNS struct {
		Headers map[string]string `json:"headers"`
		Payload struct {
			APS struct {
				Badge    *int   `json:"badge"`
				ThreadID string `json:"thread-id"`
			} `json:"aps"`
		} `json:"payload"`
	} `json:"apns"`
}

// Service is the stand-in.
type Service struct {
	*httptest.Server
	key    *rsa.PrivateKey
	script *standin.Script[Answer] // device token → answers in turn
	hold   *standin.Hold

	mu       sync.Mutex
	tokens   map[string]time.Time // access token → when it expires
	grants   int                  // access tokens issued
	refused  int                  // messages refused for their access token
	lifetime time.Duration        // of the next tokens issued
	got      []Message
}

// Start starts the stand-in; it stops with the test.
func Start(t testing.TB) *Service {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{key: k, tokens: map[string]time.Time{}, lifetime: time.Hour, script: standin.NewScript[Answer](), hold: standin.NewHold()}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	t.Cleanup(s.CloseClientConnections)
	t.Cleanup(s.Release)
	return s
}

// Key is the service account key the stand-in trusts, as FCM_CREDENTIALS.
func (s *Service) Key() string {
	der, _ := x509.MarshalPKCS8PrivateKey(s.key)
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": Project, "private_key_id": "test-key",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "roomhub@" + Project + ".iam.gserviceaccount.com", "token_uri": s.URL + "/token",
	})
	return string(b)
}

// CertFile writes the stand-in's certificate to a PEM file, for a hub
// process's SSL_CERT_FILE.
func (s *Service) CertFile(t *testing.T) string { return standin.CertFile(t, s.Server) }

// Script sets the answers to the messages for a device token, in turn.
func (s *Service) Script(token string, answers ...Answer) { s.script.Set(token, answers...) }

// Tries is how many messages arrived for a device token, answered or not.
func (s *Service) Tries(token string) int { return s.script.Tries(token) }

// Arrivals is when each message for a device token arrived.
func (s *Service) Arrivals(token string) []time.Time { return s.script.Arrivals(token) }

// Arrived gives each message's device token as it arrives.
func (s *Service) Arrived() <-chan string { return s.script.Arrived() }

// ExpireTokens makes every access token issued so far expired, as FCM
// sees them (the hub still holds them).
func (s *Service) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.tokens {
		s.tokens[k] = time.Time{}
	}
}

// SetTokenLifetime sets how long the access tokens issued from now on live.
func (s *Service) SetTokenLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lifetime = d
}

// Grants is how many access tokens the stand-in issued.
func (s *Service) Grants() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants
}

// Refused is how many messages the stand-in refused for their access
// token (401).
func (s *Service) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Messages is what FCM took, in order.
func (s *Service) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.got...)
}

// Release answers every message held and every later one at once.
func (s *Service) Release() { s.hold.Release() }

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/token":
		s.grant(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/projects/"+Project+"/messages:send":
		s.send(w, r)
	default:
		http.NotFound(w, r)
	}
}

// grant is the OAuth 2 token endpoint: a JWT-bearer grant whose assertion
// the key signed.
func (s *Service) grant(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		oauthError(w, "unsupported_grant_type")
		return
	}
	var c struct {
		jwt.RegisteredClaims
		Scope string `json:"scope"`
	}
	_, err := jwt.ParseWithClaims(r.PostForm.Get("assertion"), &c, func(*jwt.Token) (any, error) { return &s.key.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience(s.URL+"/token"), jwt.WithIssuer("roomhub@"+Project+".iam.gserviceaccount.com"),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil || c.Scope != Scope {
		oauthError(w, "invalid_grant")
		return
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	tok := "ya29." + hex.EncodeToString(b)
	s.mu.Lock()
	s.tokens[tok] = time.Now().Add(s.lifetime)
	s.grants++
	life := s.lifetime
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(life.Seconds())})
}

func oauthError(w http.ResponseWriter, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = fmt.Fprintf(w, `{"error":%q}`, code)
}

// send is messages:send.
func (s *Service) send(w http.ResponseWriter, r *http.Request) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	exp, ok := s.tokens[tok]
	s.mu.Unlock()
	if !ok || time.Now().After(exp) {
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		fcmError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var m struct{ Message Message }
	if err := json.Unmarshal(body, &m); err != nil || m.Message.Token == "" {
		fcmError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT")
		return
	}
	a := s.script.Arrive(m.Message.Token)
	if a.Hold && !s.hold.Wait(r.Context()) {
		return
	}
	if a.Status == 0 || a.Status == http.StatusOK {
		s.mu.Lock()
		s.got = append(s.got, m.Message)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"name":"projects/%s/messages/%d"}`, Project, time.Now().UnixNano())
		return
	}
	if a.RetryAfter != "" {
		w.Header().Set("Retry-After", a.RetryAfter)
	}
	fcmError(w, a.Status, map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
		404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}[a.Status], a.ErrorCode)
}

// fcmError writes FCM's error answer: a google.rpc.Status with FCM's
// errorCode in its details.
func fcmError(w http.ResponseWriter, status int, rpcStatus, errorCode string) {
	e := map[string]any{"code": status, "message": "stand-in", "status": rpcStatus}
	if errorCode != "" {
		e["details"] = []map[string]string{{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": errorCode}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
}
