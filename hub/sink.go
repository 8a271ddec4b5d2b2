package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// Read is one notification read, as the sink receives it.
type Read struct {
	UserID         int64  `json:"userId"`
	NotificationID string `json:"notificationId"`
	ReadAt         string `json:"readAt"`
}

// Sink receives flushed reads: the backend's database learns them from it.
// An error wrapping ErrSinkRefused is permanent (those reads become dead
// letters); any other error is temporary (they are retried later).
type Sink interface {
	Flush(ctx context.Context, reads []Read) error
}

// ErrSinkRefused marks a sink's permanent refusal of a batch.
var ErrSinkRefused = errors.New("sink refused the reads")

var (
	_ Sink = (*HTTPSink)(nil)
	_ Sink = (*LogSink)(nil)
)

// sinkTimeout bounds one request to the HTTP sink.
const sinkTimeout = 10 * time.Second

// HTTPSink POSTs {"reads":[…]} to a URL with X-Internal-Key. 2xx accepts;
// 5xx, 408, 429 and network errors are temporary; any other status refuses
// the batch for good.
type HTTPSink struct {
	URL    string
	Key    string
	Client *http.Client
}

// NewHTTPSink returns a sink posting to url with key, each request bounded.
func NewHTTPSink(url, key string) *HTTPSink {
	return &HTTPSink{URL: url, Key: key, Client: &http.Client{Timeout: sinkTimeout}}
}

// Flush posts reads in one request.
func (s *HTTPSink) Flush(ctx context.Context, reads []Read) error {
	c, err := postInternal(ctx, s.Client, s.URL, s.Key, struct {
		Reads []Read `json:"reads"`
	}{reads})
	if err != nil {
		return err
	}
	switch {
	case c >= 200 && c < 300:
		return nil
	case c >= 500, c == http.StatusRequestTimeout, c == http.StatusTooManyRequests:
		return fmt.Errorf("sink answered %d", c)
	default:
		return fmt.Errorf("%w: sink answered %d", ErrSinkRefused, c)
	}
}

// postInternal POSTs body as JSON to a backend URL with X-Internal-Key and
// returns the answer's status (its body is read and dropped).
func postInternal(ctx context.Context, client *http.Client, url, key string, body any) (int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Internal-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// LogSink logs each read; it stands in when READ_SINK_URL is unset.
type LogSink struct{ Log *slog.Logger }

// Flush logs reads and accepts them.
func (s *LogSink) Flush(_ context.Context, reads []Read) error {
	for _, r := range reads {
		s.Log.Info("read flushed to the log sink", "user", r.UserID, "notification", r.NotificationID, "readAt", r.ReadAt)
	}
	return nil
}
