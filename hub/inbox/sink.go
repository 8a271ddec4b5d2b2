package inbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"roomhub/hub"
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
// 5xx, 408, 429, a redirect (never followed) and network errors are
// temporary; any other status refuses the batch for good.
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
	c, err := hub.PostInternal(ctx, s.Client, s.URL, s.Key, struct {
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
	case c >= 300 && c < 400: // a redirect is not followed (see hub.PostInternal): tried again later
		return fmt.Errorf("sink answered %d, a redirect, which is not followed", c)
	default:
		return fmt.Errorf("%w: sink answered %d", ErrSinkRefused, c)
	}
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
