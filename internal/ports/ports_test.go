package ports

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func TestFree_ReservesAcrossHolders(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		p := Free(t, false)
		if seen[p] || p < low || p >= high {
			t.Fatalf("port %d handed out twice or out of range", p)
		}
		seen[p] = true
	}
	// Another holder (a second open file, as another process would have)
	// cannot take a port handed out.
	for p := range seen {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), "roomhub-test-ports", strconv.Itoa(p)), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			t.Fatalf("port %d's lock was free while reserved", p)
		}
		f.Close()
		break
	}
	if p := Free(t, true); p+10000 >= 32768 {
		t.Fatalf("a bus port %d lies in the ephemeral range", p+10000)
	}
}
