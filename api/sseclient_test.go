package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/internal/sse"
)

// frame is one parsed SSE message (or comment).
type frame = sse.Frame

// sseClient reads a real SSE stream and parses it line by line.
type sseClient struct {
	Resp   *http.Response
	frames chan frame
	cancel context.CancelFunc
	done   chan struct{}
}

// openStream opens room's stream as user; lastEventID "" means none.
func (th *testHub) openStream(t testing.TB, room, user int64, lastEventID string) *sseClient {
	t.Helper()
	return openSSE(t, fmt.Sprintf("%s/api/v1/rooms/%d/stream", th.URL, room), th.token(t, user), lastEventID)
}

func openSSE(t testing.TB, url, token, lastEventID string) *sseClient {
	t.Helper()
	c, err := tryOpenSSE(url, token, lastEventID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// tryOpenSSE is openSSE for goroutines other than the test's: it returns
// what went wrong, and the caller closes the stream.
func tryOpenSSE(url, token, lastEventID string) (*sseClient, error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if token != "" { // none: the URL carries the credential
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("open stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("open stream: %d %s", resp.StatusCode, b)
	}
	c := &sseClient{Resp: resp, frames: make(chan frame, 1<<16), cancel: cancel, done: make(chan struct{})}
	go c.read()
	return c, nil
}

func (c *sseClient) read() {
	defer close(c.done)
	defer close(c.frames)
	err := sse.Parse(c.Resp.Body, func(f frame) bool { c.frames <- f; return true })
	if os.Getenv("ROOMHUB_TEST_LOG") != "" {
		fmt.Fprintln(os.Stderr, "SSE END", err)
	}
}

// Close ends the stream and waits for the reader.
func (c *sseClient) Close() {
	c.cancel()
	c.Resp.Body.Close()
	<-c.done
}

// next returns the next event that is not a presence.update, failing after d.
func (c *sseClient) next(t testing.TB, d time.Duration) frame {
	t.Helper()
	return c.nextMatching(t, d, func(f frame) bool { return f.Event != hub.PresenceEventType })
}

// nextPresence returns the next presence.update, failing after d.
func (c *sseClient) nextPresence(t testing.TB, d time.Duration) frame {
	t.Helper()
	return c.nextMatching(t, d, func(f frame) bool { return f.Event == hub.PresenceEventType })
}

// nextMatching returns the next event (not a comment) for which want is true.
func (c *sseClient) nextMatching(t testing.TB, d time.Duration, want func(frame) bool) frame {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				t.Fatalf("stream ended while waiting for an event")
			}
			if f.Event == "" || !want(f) {
				continue
			}
			return f
		case <-timer.C:
			t.Fatalf("no event within %v", d)
		}
	}
}

// nextAny returns the next frame of any kind (comments included), or false at the end.
func (c *sseClient) nextAny(t testing.TB, d time.Duration) (frame, bool) {
	t.Helper()
	select {
	case f, ok := <-c.frames:
		return f, ok
	case <-time.After(d):
		t.Fatalf("nothing within %v", d)
		return frame{}, false
	}
}

// ended waits for the stream to end, returning what came before the end; it
// fails if the stream is still open after d.
func (c *sseClient) ended(t testing.TB, d time.Duration) []frame {
	t.Helper()
	var rest []frame
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				return rest
			}
			rest = append(rest, f)
		case <-timer.C:
			t.Fatalf("the stream did not end within %v (%d frames meanwhile, the last %+v)", d, len(rest), lastFrame(rest))
			return nil
		}
	}
}

func lastFrame(fs []frame) any {
	if len(fs) == 0 {
		return "none"
	}
	return fs[len(fs)-1]
}
