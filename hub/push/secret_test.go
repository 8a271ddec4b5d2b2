package push

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key reaches ReadSecret as the key, base64, quoted as docker --env-file
// keeps it, with \n escapes, or as a file's path; nothing it answers ever
// quotes the value (hardening V, 13: a key taken for a path was printed
// whole in the "cannot open" error).
func TestReadSecret_KeysInEveryFormAndNeverQuoted(t *testing.T) {
	pem := "-----BEGIN PRIVATE KEY-----\nhunter2secret\n-----END PRIVATE KEY-----"
	file := filepath.Join(t.TempDir(), "key.p8")
	if err := os.WriteFile(file, []byte(pem), 0o600); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(pem))
	for name, v := range map[string]string{
		"as is": pem, "base64": b64, "base64 in lines": b64[:20] + "\n" + b64[20:], "double quotes": `"` + pem + `"`,
		"single quotes": "'" + pem + "'", `\n escapes`: strings.ReplaceAll(pem, "\n", `\n`), `quoted \n escapes`: `"` + strings.ReplaceAll(pem, "\n", `\n`) + `"`,
		"a file": file, "json": `{"private_key":"hunter2secret"}`,
	} {
		got, err := ReadSecret(v)
		want := pem
		if name == "json" {
			want = v
		}
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want the key", name, got, err)
		}
	}
	for name, v := range map[string]string{
		"a missing file":        "/no/such/hunter2secret.p8",
		"a key cut short":       "-----BEGI hunter2secret",
		"base64 of no key":      base64.StdEncoding.EncodeToString([]byte("hunter2secret hunter2secret")),
		"a long value":          strings.Repeat("hunter2secret", 400),
		"a value with newlines": "hunter2secret\nhunter2secret",
		"quotes inside":         `hunter2"secret`,
	} {
		_, err := ReadSecret(v)
		if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), v) {
			t.Errorf("%s: %v, want an error that quotes nothing of it", name, err)
		}
	}
}
