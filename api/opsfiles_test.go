package api_test

import (
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// The Grafana dashboard charts every metric the hub exports, and the alert
// rules parse and name only metrics that exist.
func TestOpsFiles_DashboardChartsEveryMetricAndAlertsParse(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), func(c *testhub.Configs) { // every metric, delivery's too
		c.Delivery.Channels, c.Delivery.SinkURL = []string{"push", "webpush"}, "http://127.0.0.1:1/"
		testhub.WithPushKeys(c)
		c.Ingest.Partitions = 1
	})
	resp, err := testhub.HTTPClient.Get(th.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	families := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if name := regexp.MustCompile(`^[a-z_]+`).FindString(l); name != "" {
			families[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")] = true
		}
	}
	raw, err := os.ReadFile("../docs/grafana/roomhub.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	var exprs strings.Builder
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs.WriteString(tg.Expr + "\n")
		}
	}
	for f := range families {
		if !strings.Contains(exprs.String(), f) {
			t.Errorf("metric %s is on no dashboard panel", f)
		}
	}
	raw, err = os.ReadFile("../docs/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(raw, &rules); err != nil || len(rules.Groups) == 0 {
		t.Fatalf("alerts.yml: %v", err)
	}
	metricRE := regexp.MustCompile(`\b([a-z]+_[a-z_]+)(?:\{|\[)`)
	for _, r := range rules.Groups[0].Rules {
		for _, m := range metricRE.FindAllStringSubmatch(r.Expr, -1) {
			name := strings.TrimSuffix(strings.TrimSuffix(m[1], "_sum"), "_count")
			if !families[name] && name != "probe_http_status_code" {
				t.Errorf("alert %s names %s, which the hub does not export", r.Alert, m[1])
			}
		}
	}
}

// The Docker build context leaves out local secrets (.env files, keys and
// certificates): an image must never carry them.
func TestOpsFiles_DockerignoreKeepsSecretsOut(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{".env", ".env.*", "*.pem", "*.key", ".git"} {
		if !lines[want] {
			t.Errorf(".dockerignore lacks %q", want)
		}
	}
}
