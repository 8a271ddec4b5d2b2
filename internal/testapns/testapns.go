// Package testapns is a stand-in APNs for tests: an HTTPS server that
// speaks HTTP/2 only, hands out a .p8 key (Key), and takes a push only
// with a provider token signed by that key (ES256, kid the key's id, iss
// the team, iat within the hour, as APNs checks) for the app's topic,
// answering as the device token's script says.
package testapns

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
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

// What the stand-in's key and app are.
const (
	KeyID = "ABC123DEFG"
	Team  = "DEF123GHIJ"
	Topic = "com.example.roomhub"
)

// Answer is one scripted answer to a push: a status and APNs' reason
// (none: 200), a Retry-After, or Hold (no answer until Release).
type Answer struct {
	Status     int
	Reason     string
	RetryAfter string
	Hold       bool
}

// Notification is one push APNs took (answered 200).
type Notification struct {
	Token   string
	Sandbox bool // sent to the sandbox's host (the stand-in's /sandbox)
	Header  http.Header
	Payload struct {
		APS struct {
			Alert struct {
				Title string `json:"title"`
				Body  string `json:"body"`
			} `json:"alert"`
			Badge    *int   `json:"badge"`
			Sound    string `json:"sound"`
			ThreadID string `json:"thread-id"`
		} `json:"aps"`
		NotificationID string `json:"notificationId"`
		URL            string `json:"url"`
	}
	Size int // the payload's bytes
}

// Service is the stand-in.
type Service struct {
	*httptest.Server
	key    *ecdsa.PrivateKey
	script *standin.Script[Answer] // device token → answers in turn
	hold   *standin.Hold

	mu      sync.Mutex
	tokens  map[string]bool // provider tokens seen → refused as expired
	got     []Notification
	refused int
}

// Start starts the stand-in; it stops with the test. Its sandbox is its
// URL + "/sandbox".
func Start(t testing.TB) *Service {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{key: k, tokens: map[string]bool{}, script: standin.NewScript[Answer](), hold: standin.NewHold()}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	t.Cleanup(s.CloseClientConnections)
	t.Cleanup(s.Release)
	return s
}

// Key is the .p8 key's PEM, as APNS_PRIVATE_KEY.
func (s *Service) Key() string {
	der, _ := x509.MarshalPKCS8PrivateKey(s.key)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// CertFile writes the stand-in's certificate to a PEM file, for a hub
// process's SSL_CERT_FILE.
func (s *Service) CertFile(t *testing.T) string { return standin.CertFile(t, s.Server) }

// Script sets the answers to the pushes for a device token, in turn.
func (s *Service) Script(token string, answers ...Answer) { s.script.Set(token, answers...) }

// Arrivals is when each push to a device token arrived (its provider token
// taken).
func (s *Service) Arrivals(token string) []time.Time { return s.script.Arrivals(token) }

// Arrived gives each push's device token as it arrives.
func (s *Service) Arrived() <-chan string { return s.script.Arrived() }

// Release answers every push held and every later one at once.
func (s *Service) Release() { s.hold.Release() }

// ExpireTokens refuses every provider token seen so far as expired.
func (s *Service) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.tokens {
		s.tokens[k] = true
	}
}

// Tokens is how many provider tokens the stand-in has seen.
func (s *Service) Tokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tokens)
}

// Refused is how many pushes the stand-in refused for their provider token.
func (s *Service) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Notifications is what APNs took, in order.
func (s *Service) Notifications() []Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Notification(nil), s.got...)
}

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 {
		http.Error(w, "HTTP/2 only", http.StatusHTTPVersionNotSupported)
		return
	}
	path, sandbox := strings.CutPrefix(r.URL.Path, "/sandbox")
	token, ok := strings.CutPrefix(path, "/3/device/")
	if r.Method != http.MethodPost || !ok {
		reason(w, http.StatusNotFound, "BadPath", "")
		return
	}
	if why := s.checkToken(r.Header.Get("authorization")); why != "" {
		s.mu.Lock()
		s.refused++
		s.mu.Unlock()
		reason(w, http.StatusForbidden, why, "")
		return
	}
	if r.Header.Get("apns-topic") != Topic {
		reason(w, http.StatusBadRequest, "TopicDisallowed", "")
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if len(body) > 4096 {
		reason(w, http.StatusRequestEntityTooLarge, "PayloadTooLarge", "")
		return
	}
	a := s.script.Arrive(token)
	if a.Hold && !s.hold.Wait(r.Context()) {
		return
	}
	if a.Status != 0 && a.Status != http.StatusOK {
		reason(w, a.Status, a.Reason, a.RetryAfter)
		return
	}
	n := Notification{Token: token, Sandbox: sandbox, Header: r.Header.Clone(), Size: len(body)}
	if err := json.Unmarshal(body, &n.Payload); err != nil {
		reason(w, http.StatusBadRequest, "PayloadEmpty", "")
		return
	}
	s.mu.Lock()
	s.got = append(s.got, n)
	s.mu.Unlock()
	w.Header().Set("apns-id", fmt.Sprintf("%d", time.Now().UnixNano()))
}

// checkToken says why APNs refuses a provider token ("" it does not).
func (s *Service) checkToken(h string) string {
	raw, ok := strings.CutPrefix(h, "bearer ")
	if !ok {
		return "MissingProviderToken"
	}
	var c jwt.RegisteredClaims
	tok, err := jwt.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return &s.key.PublicKey, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithIssuer(Team), jwt.WithIssuedAt())
	if err != nil || tok.Header["kid"] != KeyID || c.IssuedAt == nil {
		return "InvalidProviderToken"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	expired := s.tokens[raw]
	s.tokens[raw] = expired
	if expired || time.Since(c.IssuedAt.Time) > time.Hour {
		return "ExpiredProviderToken"
	}
	return ""
}

// reason writes APNs' error answer.
func reason(w http.ResponseWriter, status int, why, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"reason":%q}`, why)
}
