package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
)

// PostInternal POSTs body as JSON to a backend URL with X-Internal-Key and
// returns the answer's status (its body is read and dropped). It never
// follows a redirect: the key would go along to the redirect's target (Go
// strips only the credentials it knows, and only across hosts), a 307/308
// would resend the body, and the target's 2xx would count as the backend's.
// A 3xx is answered as it is; callers treat it as a failure.
func PostInternal(ctx context.Context, client *http.Client, url, key string, body any) (int, error) {
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
	InjectTrace(ctx, req.Header)
	noRedirects := *client
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirects.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}
