package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"go.yaml.in/yaml/v3"

	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// openAPIDoc is the part of api/openapi.yaml the test reads.
type openAPIDoc struct {
	Security   []map[string][]string `yaml:"security"`
	Components struct {
		Parameters map[string]openAPIParam `yaml:"parameters"`
	} `yaml:"components"`
	Paths map[string]map[string]openAPIOp `yaml:"paths"`
}

// openAPIOp is one documented operation.
type openAPIOp struct {
	Security    *[]map[string][]string `yaml:"security"`
	Parameters  []openAPIParam         `yaml:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Example any `yaml:"example"`
		} `yaml:"content"`
	} `yaml:"requestBody"`
	Responses map[string]struct {
		Ref     string         `yaml:"$ref"`
		Content map[string]any `yaml:"content"`
	} `yaml:"responses"`
}

type openAPIParam struct {
	Ref      string `yaml:"$ref"`
	Name     string `yaml:"name"`
	In       string `yaml:"in"`
	Required bool   `yaml:"required"`
	Example  any    `yaml:"example"`
}

func loadOpenAPI(t *testing.T, th *testhub.Hub) openAPIDoc {
	t.Helper()
	resp, err := testhub.HTTPClient.Get(th.URL + "/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("/openapi.yaml: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var doc openAPIDoc
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	return doc
}

// echoPath turns /rooms/{roomId} into Echo's /rooms/:roomId (and {file}, {route} into *).
func echoPath(p string) string {
	p = strings.ReplaceAll(strings.ReplaceAll(p, "{file}", "*"), "{route}", "*")
	return strings.NewReplacer("{", ":", "}", "").Replace(p)
}

// The description and the server agree: every route is documented, every
// documented operation exists, and each answers, authenticated and not, with
// a documented status and the envelope.
func TestOpenAPI_DescribesEveryRouteAndEachAnswersAsDocumented(t *testing.T) {
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	doc := loadOpenAPI(t, th)
	routes := everyRouteDocumented(t, th, doc)
	walked := 0
	tok := th.Token(t, 1)
	for p, ops := range doc.Paths {
		for method, op := range ops {
			walked += answersAsDocumented(t, th, doc, strings.ToUpper(method), p, op, tok)
		}
	}
	if walked < len(routes)+10 {
		t.Fatalf("walked %d calls for %d routes", walked, len(routes))
	}
}

// everyRouteDocumented: every route of the server is documented, and every
// documented operation exists. It returns the routes.
func everyRouteDocumented(t *testing.T, th *testhub.Hub, doc openAPIDoc) []string {
	documented := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			documented[strings.ToUpper(m)+" "+echoPath(p)] = true
		}
	}
	var routes []string
	for _, r := range th.API.Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		routes = append(routes, r.Method+" "+r.Path)
	}
	sort.Strings(routes)
	for _, r := range routes {
		if !documented[r] {
			t.Errorf("route %s is not in api/openapi.yaml", r)
		}
		delete(documented, r)
	}
	for r := range documented {
		t.Errorf("api/openapi.yaml documents %s, which the server lacks", r)
	}
	return routes
}

// answersAsDocumented calls operation method p with its examples, with the
// credentials it asks for (tok for a bearer) and, when it asks for some,
// without: each answer's status is documented and a JSON answer is the
// envelope. It returns how many calls it made.
func answersAsDocumented(t *testing.T, th *testhub.Hub, doc openAPIDoc, method, p string, op openAPIOp, tok string) int {
	security := doc.Security
	if op.Security != nil {
		security = *op.Security
	}
	url, body := doc.example(th.URL+p, op)
	calls := 0
	for _, authed := range []bool{true, false} {
		if !authed && len(security) == 0 {
			continue
		}
		req, _ := http.NewRequest(method, url, bytes.NewReader(body))
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if authed {
			for _, s := range security {
				if _, ok := s["internalKey"]; ok {
					req.Header.Set("X-Internal-Key", th.Cfg.InternalAPIKey)
				}
				if _, ok := s["bearer"]; ok {
					req.Header.Set("Authorization", "Bearer "+tok)
				}
			}
		}
		name := method + " " + p
		if !authed {
			name += " (no credentials)"
		}
		checkAnswer(t, name, req, func(status string) bool { _, ok := op.Responses[status]; return ok })
		calls++
	}
	return calls
}

// example is op's URL on url, its path and required query parameters
// filled with their examples ("1" when none), and its body's example.
func (doc openAPIDoc) example(url string, op openAPIOp) (string, []byte) {
	q := []string{}
	for _, prm := range op.Parameters {
		if prm.Ref != "" {
			prm = doc.Components.Parameters[strings.TrimPrefix(prm.Ref, "#/components/parameters/")]
		}
		ex := "1"
		if prm.Example != nil {
			ex = strings.TrimSpace(toString(prm.Example))
		}
		switch {
		case prm.In == "path":
			url = strings.ReplaceAll(url, "{"+prm.Name+"}", ex)
		case prm.In == "query" && prm.Required:
			q = append(q, prm.Name+"="+ex)
		}
	}
	if len(q) > 0 {
		url += "?" + strings.Join(q, "&")
	}
	var body []byte
	if op.RequestBody != nil {
		if c, ok := op.RequestBody.Content["application/json"]; ok && c.Example != nil {
			body, _ = json.Marshal(c.Example)
		}
	}
	return url, body
}

// checkAnswer sends req and checks its status is documented and a JSON
// answer is the envelope; a stream is closed after its headers.
func checkAnswer(t *testing.T, name string, req *http.Request, documented func(string) bool) {
	t.Helper()
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer resp.Body.Close()
	code := strconv.Itoa(resp.StatusCode)
	if !documented(code) {
		t.Errorf("%s answered %s, which is not documented", name, code)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return
	}
	var env map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Errorf("%s: not JSON: %v", name, err)
		return
	}
	for _, k := range []string{"isSuccess", "code", "message", "result"} {
		if _, ok := env[k]; !ok {
			t.Errorf("%s: the envelope lacks %s: %v", name, k, env)
		}
	}
	if ok, _ := env["isSuccess"].(bool); ok != (resp.StatusCode == 200) || (!ok && env["result"] != nil) {
		t.Errorf("%s: %d with envelope %v", name, resp.StatusCode, env)
	}
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// Every answer a test reads through testhub's Do is checked against
// api/openapi.yaml (testhub.CheckAnswer), so that the spec cannot drift
// from the hub (issue 57, 2): here, that the check refuses what drifts.
func TestOpenAPI_EveryAnswerIsCheckedAgainstTheSpec(t *testing.T) {
	const publish = "/api/v1/notifications/publish"
	good := `{"isSuccess":true,"code":"COMMON200","message":"OK","result":{"streamId":"1-0","deliveredTo":0,"duplicate":false}}`
	if err := testhub.CheckAnswer("POST", publish, 200, []byte(good)); err != nil {
		t.Fatalf("a publish's answer: %v", err)
	}
	for _, bad := range []string{
		`{"isSuccess":true,"code":"COMMON200","message":"OK","result":{"streamId":"1-0"}}`,                               // a required field missing
		`{"isSuccess":true,"code":"COMMON200","message":"OK","result":{"streamId":1,"deliveredTo":0,"duplicate":false}}`, // a wrong type
		`{"isSuccess":true,"code":"NOPE","message":"OK","result":{"streamId":"1-0","deliveredTo":0,"duplicate":false}}`,  // a code not in the table
		`{"isSuccess":true,"code":"COMMON200","message":"OK","result":{"userId":"7","token":"t","expiresInSecs":1}}`,     // (as /dev/token's) not a publish
	} {
		if err := testhub.CheckAnswer("POST", publish, 200, []byte(bad)); err == nil {
			t.Errorf("%s passed", bad)
		}
	}
	if err := testhub.CheckAnswer("GET", "/dev/token?userId=7", 200, []byte(`{"isSuccess":true,"code":"COMMON200","message":"OK","result":{"userId":"7","token":"t","expiresInSecs":1}}`)); err == nil {
		t.Error("/dev/token's userId as a string passed: the spec says a number")
	}
}
