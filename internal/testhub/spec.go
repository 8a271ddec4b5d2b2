package testhub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// specOp is one operation of api/openapi.yaml: its route as a pattern and
// the schema of each JSON answer it documents, by status.
type specOp struct {
	method  string
	path    *regexp.Regexp
	answers map[int]*jsonschema.Schema
}

// spec is api/openapi.yaml's operations, read once.
var spec = sync.OnceValues(loadSpec)

// CheckAnswer returns an error when a JSON answer of the hub (body, with
// status, to method on path) does not match what api/openapi.yaml says of
// it: every answer a test reads through Do is checked, so that the spec
// cannot drift from the hub (issue 57, 2). A route or status the spec does
// not describe is the OpenAPI test's to find, not this check's.
func CheckAnswer(method, path string, status int, body []byte) error {
	ops, err := spec()
	if err != nil {
		return err
	}
	path, _, _ = strings.Cut(path, "?")
	for _, op := range ops {
		if op.method != method || !op.path.MatchString(path) {
			continue
		}
		sch := op.answers[status]
		if sch == nil {
			return nil
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("%s %s: %d answer is not JSON: %w", method, path, status, err)
		}
		if err := sch.Validate(v); err != nil {
			return fmt.Errorf("%s %s: the %d answer does not match api/openapi.yaml: %v\n%s", method, path, status, err, body)
		}
		return nil
	}
	return nil
}

// loadSpec compiles each documented JSON answer's schema.
func loadSpec() ([]specOp, error) {
	raw, err := os.ReadFile(filepath.Join(Root(), "api", "openapi.yaml"))
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	asJSON, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(asJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "file:///openapi.json"
	if err := c.AddResource(url, parsed); err != nil {
		return nil, err
	}
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	param := regexp.MustCompile(`\\{[^}]+\\}`)
	var ops []specOp
	paths, _ := doc["paths"].(map[string]any)
	for p, item := range paths {
		methods, _ := item.(map[string]any)
		for m, o := range methods {
			op, _ := o.(map[string]any)
			responses, _ := op["responses"].(map[string]any)
			so := specOp{method: strings.ToUpper(m), answers: map[int]*jsonschema.Schema{},
				path: regexp.MustCompile("^" + param.ReplaceAllString(regexp.QuoteMeta(p), "[^/]+") + "$")}
			for code, r := range responses {
				status, err := strconv.Atoi(code)
				if err != nil {
					continue
				}
				loc := "#/paths/" + esc.Replace(p) + "/" + m + "/responses/" + code
				resp, _ := r.(map[string]any)
				if ref, ok := resp["$ref"].(string); ok {
					loc, resp = ref, lookup(doc, ref)
				}
				content, _ := resp["content"].(map[string]any)
				js, _ := content["application/json"].(map[string]any)
				if _, ok := js["schema"]; !ok {
					continue
				}
				sch, err := c.Compile(url + loc + "/content/application~1json/schema")
				if err != nil {
					return nil, fmt.Errorf("api/openapi.yaml %s %s %s: %w", m, p, code, err)
				}
				so.answers[status] = sch
			}
			ops = append(ops, so)
		}
	}
	return ops, nil
}

// lookup is the object ref ("#/components/…") points to in doc.
func lookup(doc map[string]any, ref string) map[string]any {
	cur := any(doc)
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, _ := cur.(map[string]any)
		cur = m[part]
	}
	out, _ := cur.(map[string]any)
	return out
}

// SpecChecked wraps base (nil: http.DefaultTransport) so that every JSON
// answer it carries is checked by CheckAnswer: a request whose answer
// does not match api/openapi.yaml fails with the mismatch. Tests that talk
// to a hub with a plain http.Client (the binary's) set it as the client's
// transport.
func SpecChecked(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return specChecked{base}
}

type specChecked struct{ base http.RoundTripper }

func (s specChecked) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(req)
	if err != nil || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if err := CheckAnswer(req.Method, req.URL.Path, resp.StatusCode, body); err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}
