package push

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"strings"
)

// maxSecretPath is the longest value ReadSecret takes for a file's path:
// anything longer is the key itself.
const maxSecretPath = 4096

// ReadSecret is a key given as a variable's value: the key itself (JSON, a
// PEM block, either one base64-encoded, with `\n` escapes or inside the
// quotes a docker --env-file keeps), else the path of a file that holds it.
// A value with a newline, a quote, a backslash escape or over 4 KiB is never
// taken for a path. Its errors never quote the value or a path made of it:
// a key mistaken for a path must not reach a log.
func ReadSecret(v string) ([]byte, error) {
	t := strings.TrimSpace(v)
	if len(t) >= 2 && (t[0] == '"' || t[0] == '\'') && t[len(t)-1] == t[0] {
		t = strings.TrimSpace(t[1 : len(t)-1])
	}
	if strings.HasPrefix(t, "-----BEGIN") { // a PEM's \n escapes (a JSON key's are JSON's own)
		t = strings.ReplaceAll(t, `\n`, "\n")
	}
	if inline(t) {
		return []byte(t), nil
	}
	if b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(t), "")); err == nil {
		if d := strings.TrimSpace(string(b)); inline(d) {
			return []byte(d), nil
		}
	}
	if len(t) > maxSecretPath || strings.ContainsAny(t, "\n\r\"'\\") {
		return nil, errors.New("neither the key (JSON or PEM, as is or base64) nor a file's path")
	}
	b, err := os.ReadFile(t)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // "no such file or directory", without the path
		}
		return nil, errors.New("neither the key (JSON or PEM, as is or base64) nor a file that can be read: " + err.Error())
	}
	return b, nil
}

// inline says whether t is a key itself: JSON or a PEM block.
func inline(t string) bool { return strings.HasPrefix(t, "{") || strings.HasPrefix(t, "-----BEGIN") }
