package testhub

import (
	"net/http"
	"roomhub/hub"
	"strings"
	"testing"
)

// Batch posts a batch publish and returns the status and its results.
func (th *Hub) Batch(t *testing.T, events ...string) (int, []BatchResult) {
	t.Helper()
	code, env := th.Do(t, http.MethodPost, "/api/v1/notifications/publish/batch",
		map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey, "Content-Type": "application/json"},
		`{"events":[`+strings.Join(events, ",")+`]}`)
	var r struct{ Results []BatchResult }
	if code == 200 {
		Remarshal(t, env.Result, &r)
	}
	return code, r.Results
}

// BatchResult is one event's answer in a batch publish's results.
type BatchResult struct {
	IsSuccess bool               `json:"isSuccess"`
	Result    *hub.PublishResult `json:"result,omitempty"`
	Code      string             `json:"code,omitempty"`
	Message   string             `json:"message,omitempty"`
}
