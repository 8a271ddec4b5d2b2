package push

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// What a service answers is bounded for every channel (hardening IV): a
// header over MaxAnswerHeader or a body over MaxAnswerBody is
// ANSWER_TOO_LARGE, retried; MaxAnswerBody of body is read whole; an
// answer that never comes is TIMEOUT; no redirect is followed.
func TestClient_AnswersAreBounded(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/header":
			w.Header().Set("X-Filler", strings.Repeat("a", MaxAnswerHeader+1<<10))
		case "/body":
			_, _ = w.Write(make([]byte, 1<<20))
		case "/fits":
			_, _ = w.Write(make([]byte, MaxAnswerBody))
		case "/slow":
			<-r.Context().Done()
		case "/moved":
			http.Redirect(w, r, "/fits", http.StatusFound)
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	c := NewClient(500*time.Millisecond, srv.Client().Transport.(*http.Transport).TLSClientConfig, nil)
	defer c.CloseIdleConnections()
	get := func(path string) (int, []byte, Answer) {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			return 0, nil, NoAnswer(err)
		}
		b, err := ReadAnswer(resp)
		if err != nil {
			return resp.StatusCode, nil, NoAnswer(err)
		}
		return resp.StatusCode, b, Answer{}
	}
	for path, code := range map[string]string{"/header": "ANSWER_TOO_LARGE", "/body": "ANSWER_TOO_LARGE", "/slow": "TIMEOUT"} {
		if _, _, a := get(path); a.Code != code || !a.Retryable {
			t.Errorf("%s: %+v, want %s retried", path, a, code)
		}
	}
	if status, b, a := get("/fits"); status != 200 || len(b) != MaxAnswerBody || a.Code != "" {
		t.Errorf("/fits: %d, %d bytes, %+v", status, len(b), a)
	}
	if status, _, _ := get("/moved"); status != http.StatusFound {
		t.Errorf("/moved: %d, want the redirect itself", status)
	}
	if !errors.Is(ErrAnswerTooLarge, ErrAnswerTooLarge) || !IsTooLarge(ErrAnswerTooLarge) {
		t.Error("ErrAnswerTooLarge is not too large")
	}
}
