package version_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"roomhub/internal/version"
)

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The chart, the web package, the API's spec and the changelog's latest
// entry carry the binary's version, and name the license; the React example
// installs the web package's tarball of that version.
func TestVersion_OneVersionEverywhere(t *testing.T) {
	var c struct {
		Version     string            `yaml:"version"`
		AppVersion  string            `yaml:"appVersion"`
		Annotations map[string]string `yaml:"annotations"`
	}
	if err := yaml.Unmarshal(read(t, "deploy/helm/roomhub/Chart.yaml"), &c); err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Version, License string }
	if err := json.Unmarshal(read(t, "web/package.json"), &pkg); err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Info struct {
			Version string
			License struct{ Identifier string }
		}
	}
	if err := yaml.Unmarshal(read(t, "api/openapi.yaml"), &spec); err != nil {
		t.Fatal(err)
	}
	changelog := regexp.MustCompile(`(?m)^## (\S+)`).FindSubmatch(read(t, "CHANGELOG.md"))
	v := version.Version
	if c.Version != v || c.AppVersion != v || pkg.Version != v || spec.Info.Version != v || changelog == nil || string(changelog[1]) != v {
		t.Fatalf("version %s: chart %s/%s, web %s, spec %s, changelog %q", v, c.Version, c.AppVersion, pkg.Version, spec.Info.Version, changelog)
	}
	var example struct{ Dependencies map[string]string }
	if err := json.Unmarshal(read(t, "web/examples/react/package.json"), &example); err != nil {
		t.Fatal(err)
	}
	tarball := "roomhub-client-" + v + ".tgz" // what npm pack names the web package
	if example.Dependencies["roomhub-client"] != "file:"+tarball || !strings.Contains(string(read(t, "web/README.md")), "npm pack ../..     # "+tarball) {
		t.Fatalf("version %s: the React example installs %q, web/README.md does not print %s", v, example.Dependencies["roomhub-client"], tarball)
	}
	if c.Annotations["artifacthub.io/license"] != "Apache-2.0" || pkg.License != "Apache-2.0" || spec.Info.License.Identifier != "Apache-2.0" ||
		!strings.Contains(string(read(t, "LICENSE")), "Apache License") {
		t.Fatalf("license: chart %q, web %q, spec %q", c.Annotations["artifacthub.io/license"], pkg.License, spec.Info.License.Identifier)
	}
}

// String names the version, the revision (short) and Go's.
func TestVersion_String(t *testing.T) {
	i := version.Info{Version: "1.2.3", Revision: "0123456789abcdef", GoVersion: "go1.26.8"}
	if got := i.String(); got != "roomhub 1.2.3 (0123456789ab, go1.26.8)" {
		t.Fatal(got)
	}
	if got := (version.Info{Version: "1.2.3", GoVersion: "go1.26.8"}).String(); got != "roomhub 1.2.3 (go1.26.8)" {
		t.Fatal(got)
	}
}
