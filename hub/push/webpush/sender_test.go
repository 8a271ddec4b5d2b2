package webpush

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"roomhub/hub/push"
	"strings"
	"testing"
	"time"
)

// An answer over the bounds is a failed attempt whatever its status: a
// 9 MiB header, or a body over 4 KiB (read no further); 4 KiB of body is
// an answer like any other.
func TestSender_AnswersOverTheBoundsFail(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/header":
			w.Header().Set("X-Filler", strings.Repeat("a", 9<<20))
		case "/body":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(make([]byte, 1<<20))
			return
		case "/fits":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(make([]byte, push.MaxAnswerBody))
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	k, _ := NewKeys()
	s := NewSender(k, "mailto:a@b.c", true, 5*time.Second, srv.Client().Transport.(*http.Transport).TLSClientConfig)
	defer s.Close()
	for path, tooLarge := range map[string]bool{"/header": true, "/body": true, "/fits": false} {
		r := s.Send(context.Background(), sub(srv.URL+path), Push{Payload: []byte("{}"), TTL: time.Minute})
		if errors.Is(r.Err, ErrAnswerTooLarge) != tooLarge || (!tooLarge && r.Status != http.StatusCreated) {
			t.Errorf("%s: %+v, want over the bounds: %v", path, r, tooLarge)
		}
		if tooLarge && !r.unanswered() {
			t.Errorf("%s: not counted against the origin", path)
		}
	}
}
