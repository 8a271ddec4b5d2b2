package fcm

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/oauth2/jwt"
)

// A token endpoint that hangs holds no push past its own time: the push
// that asks gives up at its deadline, and one that waits for that request
// gives up at its own (hardening V, 19: token requests ran without the
// push's deadline, and every FCM push queued behind one in 10 s steps).
func TestTokens_AHangingEndpointHoldsNoPushPastItsTime(t *testing.T) {
	asked, release := make(chan struct{}, 4), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"tok","token_type":"Bearer","expires_in":3600}`))
	}))
	defer srv.Close()
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	conf := &jwt.Config{Email: "hub@example.iam.gserviceaccount.com", PrivateKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		TokenURL: srv.URL, Scopes: []string{Scope}}
	tk := newTokens(conf, srv.Client())

	first, cancelFirst := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() { _, _, err := tk.get(first); firstDone <- err }()
	<-asked // the first push's request hangs at the endpoint
	second, cancelSecond := context.WithCancel(context.Background())
	secondDone := make(chan error, 1)
	go func() { _, _, err := tk.get(second); secondDone <- err }()
	cancelSecond() // the waiting push's time is up, then the asking one's
	cancelFirst()
	for name, c := range map[string]chan error{"the asking push": firstDone, "the waiting push": secondDone} {
		select {
		case err := <-c:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s: %v, want its own context's end", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still waits for the hanging request", name)
		}
	}
	close(release) // the endpoint answers again: the next push gets a token
	if tok, _, err := tk.get(context.Background()); err != nil || tok != "tok" {
		t.Fatalf("after the endpoint came back: %q %v", tok, err)
	}
}
