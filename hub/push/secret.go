package push

import (
	"os"
	"strings"
)

// ReadSecret is a key given as a variable's value: the key itself (JSON,
// or a PEM block), else the path of a file that holds it.
func ReadSecret(v string) ([]byte, error) {
	t := strings.TrimSpace(v)
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "-----BEGIN") {
		return []byte(t), nil
	}
	return os.ReadFile(t)
}
