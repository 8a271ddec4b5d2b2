package testhub

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// RepoFile is the file at path, relative to the repository's root.
func RepoFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root(), path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// SnippetAfter is the first snippet fenced as lang after marker in the
// file at path (relative to the repository's root), as printed.
func SnippetAfter(t testing.TB, path, marker, lang string) string {
	t.Helper()
	_, rest, ok := strings.Cut(RepoFile(t, path), marker)
	if !ok {
		t.Fatalf("%s has no %q", path, marker)
	}
	_, rest, _ = strings.Cut(rest, "```"+lang+"\n")
	code, _, _ := strings.Cut(rest, "```")
	return code
}

// ArtifactsDir is where browser tests leave screenshots: ROOMHUB_ARTIFACTS,
// or a temp folder.
func ArtifactsDir(t *testing.T) string {
	dir := os.Getenv("ROOMHUB_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
