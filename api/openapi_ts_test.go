package api_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// tsProgram uses the TypeScript types openapi-typescript generates from
// api/openapi.yaml with openapi-fetch, as a team's TypeScript backend
// would: it publishes with data and a recipient, lists the user's inbox
// and reads the item's data, marks it read and counts, with no non-null
// assertion and no cast. HUB, KEY and TOKEN are filled in by the test.
const tsProgram = `import createClient from "openapi-fetch";
import type { paths } from "./api";

const HUB = "{{HUB}}", KEY = "{{KEY}}", TOKEN = "{{TOKEN}}";
const hub = createClient<paths>({ baseUrl: HUB });
const internal = { "X-Internal-Key": KEY };
const user = { Authorization: ` + "`Bearer ${TOKEN}`" + ` };

const pub = await hub.POST("/api/v1/notifications/publish", {
  headers: internal,
  body: { roomId: 42, eventType: "comment.created", data: { text: "hi from TypeScript" }, recipientIds: [7] },
});
if (!pub.data) throw new Error("publish: " + JSON.stringify(pub.error));
const streamId: string = pub.data.result.streamId;

const list = await hub.GET("/api/v1/notifications", { headers: user, params: { query: { limit: 10 } } });
if (!list.data) throw new Error("list: " + JSON.stringify(list.error));
const first = list.data.result.notifications[0];
if (!first) throw new Error("nothing listed");
const text = first.data.text;
if (typeof text !== "string") throw new Error("no text in " + JSON.stringify(first.data));

const read = await hub.PATCH("/api/v1/notifications/{notificationId}/read", {
  headers: user, params: { path: { notificationId: first.notificationId } },
});
if (!read.data) throw new Error("read: " + JSON.stringify(read.error));

const counts = await hub.GET("/api/v1/notifications/counts", { headers: user });
if (!counts.data) throw new Error("counts: " + JSON.stringify(counts.error));
const unread: number = counts.data.result.unread;

console.log("ok " + first.notificationId.endsWith(streamId) + " " + text + " " + unread);
`

// A TypeScript client generated from api/openapi.yaml (openapi-typescript
// and openapi-fetch, as their READMEs say) compiles under tsc --strict
// without a cast or a non-null assertion, and publishes, lists, reads and
// counts against a live hub (issue 57, 1): free-form objects are objects
// of anything, what the hub always sends is required, and a request field
// with a default is optional. README's TypeScript lines run too.
func TestOpenAPI_ATypeScriptClientCompilesStrictlyAndWorks(t *testing.T) {
	bin := func(name string) string {
		p, _ := filepath.Abs(filepath.Join("..", "web", "e2e", "node_modules", ".bin", name))
		return p
	}
	spec, _ := filepath.Abs("openapi.yaml")
	dir := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(bin("openapi-typescript"), spec, "-o", filepath.Join(dir, "api.d.ts"))
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	src := strings.NewReplacer("{{HUB}}", th.URL, "{{KEY}}", th.Cfg.InternalAPIKey, "{{TOKEN}}", th.Token(t, 7)).Replace(tsProgram)
	if strings.Contains(src, "as any") || strings.Contains(src, "!.") {
		t.Fatal("the program casts or asserts non-null: it proves nothing")
	}
	for name, body := range map[string]string{
		"client.ts": src,
		"tsconfig.json": `{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2022", "module": "es2022",
			"moduleResolution": "bundler", "lib": ["es2022", "dom"], "typeRoots": []}, "files": ["client.ts"]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// openapi-fetch from web/e2e: the folder's node_modules, as an app's own
	if err := os.Symlink(filepath.Join(filepath.Dir(bin("tsc")), ".."), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	run(bin("tsc"), "-p", ".")
	run(bin("esbuild"), "client.ts", "--bundle", "--platform=node", "--format=esm", "--outfile=client.mjs")
	if out := run("node", "client.mjs"); strings.TrimSpace(out) != "ok true hi from TypeScript 0" {
		t.Fatalf("the TypeScript client said %q", out)
	}
	readmeTypeScript(t, th, dir, run, bin)
}

// readmeTypeScript runs README's TypeScript lines as printed, the hub's
// address and key aside: the generator's command (from the live hub's
// /openapi.yaml), then the snippet, compiled strictly and run: it prints
// the publish's stream id.
func readmeTypeScript(t *testing.T, th *testhub.Hub, dir string, run func(string, ...string) string, bin func(string) string) {
	t.Helper()
	local := strings.NewReplacer("http://localhost:8083", th.URL, "local_dev_internal_key", th.Cfg.InternalAPIKey)
	gen := strings.Fields(local.Replace(strings.TrimSpace(testhub.SnippetAfter(t, "README.md", "For TypeScript", "sh"))))
	if len(gen) != 5 || gen[0] != "npx" || gen[1] != "openapi-typescript" {
		t.Fatalf("README's generator command is not the one this test knows: %v", gen)
	}
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(bin("openapi-typescript"), gen[2:]...) // npx runs the same binary
	snippet := local.Replace(testhub.SnippetAfter(t, "README.md", "For TypeScript", "ts"))
	if err := os.WriteFile(filepath.Join(dir, "src", "readme.ts"), []byte(snippet), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := `{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2022", "module": "es2022",
		"moduleResolution": "bundler", "lib": ["es2022", "dom"], "typeRoots": []}, "files": ["src/readme.ts"]}`
	if err := os.WriteFile(filepath.Join(dir, "readme.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	run(bin("tsc"), "-p", "readme.json")
	run(bin("esbuild"), "src/readme.ts", "--bundle", "--platform=node", "--format=esm", "--outfile=readme.mjs")
	if out := strings.TrimSpace(run("node", "readme.mjs")); !strings.Contains(out, "-") {
		t.Fatalf("README's TypeScript printed %q, not a stream id", out)
	}
}
