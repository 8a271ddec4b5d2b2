package testhub

import (
	"net/http"
	"roomhub/hub/ingest"
	"testing"
)

func (th *Hub) IngestDead(t *testing.T, query string) (int, DeadPage) {
	t.Helper()
	code, env := th.Do(t, http.MethodGet, "/api/v1/internal/ingest/dead?"+query,
		map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey}, "")
	var page DeadPage
	if code == 200 {
		Remarshal(t, env.Result, &page)
	}
	return code, page
}

type DeadPage struct {
	Entries   []ingest.DeadEntry
	NextAfter *string
}
