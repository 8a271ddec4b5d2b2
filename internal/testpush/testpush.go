// Package testpush is a stand-in push service for tests: an HTTPS server
// that checks each push's VAPID token against the hub's public key (ES256,
// aud its own origin, exp within 12 hours), opens it with the
// subscription's keys, keeps it, and answers as the subscription's script
// says.
package testpush

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"roomhub/hub/push/webpush"
	"roomhub/internal/standin"
)

// Statuses a script may hold besides real ones.
const (
	Hang         = 999 // no answer until the hub gives up
	HangAfter2xx = 998 // 201 and the headers, then a body that never ends: taken, but the hub never hears the end
	Hold         = 997 // no answer until the test calls Release, then 201
	HugeHeader   = 996 // 201 with a 9 MiB header: over the bounds of an answer
	HugeBody     = 995 // 201 with a 1 MiB body: over the bounds of an answer
)

// Service is the stand-in.
type Service struct {
	*httptest.Server
	t *testing.T

	script    *standin.Script[int] // path → the statuses to answer, in turn (none: 201)
	hold      *standin.Hold
	mu        sync.Mutex
	publicKey string // the hub's VAPID key (SetPublicKey)
	devices   map[string]*device
	got       []Push
	held      int // pushes being held now (Hold)
	mostHeld  int
}

type device struct {
	priv *ecdh.PrivateKey
	auth []byte
}

// Push is one push as the service took it (a 2xx).
type Push struct {
	Path    string
	Message webpush.Message
	Header  http.Header
}

// Start starts the stand-in; it stops with the test.
func Start(t *testing.T) *Service {
	s := &Service{t: t, devices: map[string]*device{}, script: standin.NewScript[int](), hold: standin.NewHold()}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	t.Cleanup(s.CloseClientConnections)
	return s
}

// SetPublicKey names the key the pushes must be signed with.
func (s *Service) SetPublicKey(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publicKey = k
}

// Arrived gives the path of each push as it arrives.
func (s *Service) Arrived() <-chan string { return s.script.Arrived() }

// CertFile writes the service's certificate to a PEM file, for a hub
// process's SSL_CERT_FILE.
func (s *Service) CertFile(t *testing.T) string { return standin.CertFile(t, s.Server) }

// Subscription makes a device at path answering statuses in turn (none:
// 201), and returns the PushSubscription JSON a browser would send for it.
func (s *Service) Subscription(path string, statuses ...int) string {
	priv, _ := ecdh.P256().GenerateKey(rand.Reader)
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	s.mu.Lock()
	s.devices[path] = &device{priv: priv, auth: auth}
	s.mu.Unlock()
	s.script.Set(path, statuses...)
	b64 := base64.RawURLEncoding.EncodeToString
	return fmt.Sprintf(`{"endpoint":%q,"expirationTime":null,"keys":{"p256dh":%q,"auth":%q}}`, s.URL+path, b64(priv.PublicKey().Bytes()), b64(auth))
}

// Release answers every push held (Hold) and every later one at once.
// Calling it again does nothing.
func (s *Service) Release() { s.hold.Release() }

// MostHeld is the most pushes held at once.
func (s *Service) MostHeld() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mostHeld
}

// Pushes is what the service took, in order.
func (s *Service) Pushes() []Push {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Push(nil), s.got...)
}

// Arrivals is when each push to path arrived, in order.
func (s *Service) Arrivals(path string) []time.Time { return s.script.Arrivals(path) }

// arrive notes a push's arrival and returns its device, the hub key it
// must be signed with and the status the script says to answer.
func (s *Service) arrive(path string) (dev *device, key string, status int) {
	status = s.script.Arrive(path)
	if status == 0 {
		status = http.StatusCreated
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.devices[path], s.publicKey, status
}

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	dev, key, status := s.arrive(r.URL.Path)
	if err := s.checkVAPID(r.Header.Get("Authorization"), key); err != nil {
		s.t.Errorf("push to %s: VAPID: %v", r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if dev == nil {
		if r.URL.Path == "/elsewhere" {
			s.t.Error("a redirect was followed")
		}
		http.Error(w, "no such subscription", http.StatusNotFound)
		return
	}
	plain, err := webpush.Decrypt(body, dev.auth, dev.priv)
	if err != nil || r.Header.Get("Content-Encoding") != "aes128gcm" {
		s.t.Errorf("push to %s: not sealed for the subscription: %v", r.URL.Path, err)
		http.Error(w, "bad encryption", http.StatusBadRequest)
		return
	}
	var m webpush.Message
	if err := json.Unmarshal(plain, &m); err != nil {
		s.t.Errorf("push to %s: %q is not a message", r.URL.Path, plain)
	}
	switch status {
	case Hang:
		<-r.Context().Done()
		// No answer at all: returning would send a 200, and a client
		// whose time limit ends as it arrives can still read it.
		panic(http.ErrAbortHandler)
	case HangAfter2xx:
		s.mu.Lock()
		s.got = append(s.got, Push{Path: r.URL.Path, Message: m, Header: r.Header.Clone()})
		s.mu.Unlock()
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "{")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	case Hold:
		s.mu.Lock()
		s.held++
		s.mostHeld = max(s.mostHeld, s.held)
		s.mu.Unlock()
		s.hold.Wait(r.Context())
		s.mu.Lock()
		s.held--
		s.mu.Unlock()
		if r.Context().Err() != nil {
			panic(http.ErrAbortHandler)
		}
		status = http.StatusCreated
	case HugeHeader:
		w.Header().Set("X-Filler", strings.Repeat("a", 9<<20))
		w.WriteHeader(http.StatusCreated)
		return
	case HugeBody:
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(make([]byte, 1<<20))
		return
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "2")
	case http.StatusFound:
		w.Header().Set("Location", "/elsewhere")
	}
	if status/100 == 2 {
		s.mu.Lock()
		s.got = append(s.got, Push{Path: r.URL.Path, Message: m, Header: r.Header.Clone()})
		s.mu.Unlock()
	}
	w.WriteHeader(status)
}

func (s *Service) checkVAPID(h, want string) error {
	rest, ok := strings.CutPrefix(h, "vapid t=")
	tok, k, ok2 := strings.Cut(rest, ", k=")
	if !ok || !ok2 || k != want {
		return fmt.Errorf("header %q, want the hub's key %s", h, want)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(k)
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return err
	}
	claims := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience(s.URL), jwt.WithExpirationRequired()); err != nil {
		return err
	}
	if exp, _ := claims.GetExpirationTime(); exp == nil || time.Until(exp.Time) > 12*time.Hour+time.Minute {
		return fmt.Errorf("exp %v: more than 12 hours ahead", exp)
	}
	return nil
}
