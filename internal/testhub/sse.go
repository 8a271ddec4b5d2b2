package testhub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"roomhub/hub"
	"roomhub/internal/sse"
)

// Frame is one parsed SSE message (or comment).
type Frame = sse.Frame

// SSEClient reads a real SSE stream and parses it line by line.
type SSEClient struct {
	Resp   *http.Response
	frames chan Frame
	cancel context.CancelFunc
	done   chan struct{}
}

// OpenStream opens room's stream as user; lastEventID "" means none.
func (th *Hub) OpenStream(t testing.TB, room, user int64, lastEventID string) *SSEClient {
	t.Helper()
	return OpenSSE(t, fmt.Sprintf("%s/api/v1/rooms/%d/stream", th.URL, room), th.Token(t, user), lastEventID)
}

// OpenSSE opens the stream at url with token (as Bearer, unless "") and
// lastEventID (unless ""), closed when the test ends.
func OpenSSE(t testing.TB, url, token, lastEventID string) *SSEClient {
	t.Helper()
	c, err := TryOpenSSE(url, token, lastEventID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TryOpenSSE is OpenSSE for goroutines other than the test's: it returns
// what went wrong, and the caller closes the stream.
func TryOpenSSE(url, token, lastEventID string) (*SSEClient, error) {
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
	c := &SSEClient{Resp: resp, frames: make(chan Frame, 1<<16), cancel: cancel, done: make(chan struct{})}
	go c.readFrames()
	return c, nil
}

// readFrames parses the stream into c.frames until it ends.
func (c *SSEClient) readFrames() {
	defer close(c.done)
	defer close(c.frames)
	err := sse.Parse(c.Resp.Body, func(f Frame) bool { c.frames <- f; return true })
	if os.Getenv("ROOMHUB_TEST_LOG") != "" {
		fmt.Fprintln(os.Stderr, "SSE END", err)
	}
}

// Close ends the stream and waits for the reader.
func (c *SSEClient) Close() {
	c.cancel()
	c.Resp.Body.Close()
	<-c.done
}

// Next returns the next event that is not a presence.update, failing after d.
func (c *SSEClient) Next(t testing.TB, d time.Duration) Frame {
	t.Helper()
	return c.NextMatching(t, d, func(f Frame) bool { return f.Event != hub.PresenceEventType })
}

// NextPresence returns the next presence.update, failing after d.
func (c *SSEClient) NextPresence(t testing.TB, d time.Duration) Frame {
	t.Helper()
	return c.NextMatching(t, d, func(f Frame) bool { return f.Event == hub.PresenceEventType })
}

// NextMatching returns the next event (not a comment) for which want is true.
func (c *SSEClient) NextMatching(t testing.TB, d time.Duration, want func(Frame) bool) Frame {
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

// NextAny returns the next frame of any kind (comments included), or false at the end.
func (c *SSEClient) NextAny(t testing.TB, d time.Duration) (Frame, bool) {
	t.Helper()
	select {
	case f, ok := <-c.frames:
		return f, ok
	case <-time.After(d):
		t.Fatalf("nothing within %v", d)
		return Frame{}, false
	}
}

// Ended waits for the stream to end, returning what came before the end; it
// fails if the stream is still open after d.
func (c *SSEClient) Ended(t testing.TB, d time.Duration) []Frame {
	t.Helper()
	var rest []Frame
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

func lastFrame(fs []Frame) any {
	if len(fs) == 0 {
		return "none"
	}
	return fs[len(fs)-1]
}

// PresenceUpdate reads the next presence.update within d and its data.
func (c *SSEClient) PresenceUpdate(t *testing.T, d time.Duration) (PresenceData, Frame) {
	t.Helper()
	f := c.NextPresence(t, d)
	var u PresenceData
	if err := json.Unmarshal([]byte(f.Data), &u); err != nil {
		t.Fatalf("presence.update data %q: %v", f.Data, err)
	}
	if f.ID == "" {
		t.Fatalf("presence.update without id: it must go through history")
	}
	return u, f
}

// PresenceData is the data of a presence.update event.
type PresenceData struct {
	OnlineUsers []int64 `json:"onlineUsers"`
	Joined      *int64  `json:"joined"`
	Left        *int64  `json:"left"`
	Count       int     `json:"count"`
	JoinedUsers []int64 `json:"joinedUsers"`
	LeftUsers   []int64 `json:"leftUsers"`
}
