// Package ports hands tests loopback ports that no other test on this
// machine holds. Picking a port by opening and closing a listener is not
// enough while packages run in parallel: two processes can pick the same
// one, and a test then talks to another package's server. Each port handed
// out here is also reserved with an exclusive lock on a file named after it
// (flock: one holder at a time, across processes and within one), held
// until the test ends.
package ports

import (
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// The ports handed out lie below Linux's ephemeral range (32768 and up),
// where the kernel picks the local ports of outgoing connections.
const (
	low  = 20000
	high = 32700 // a cluster node's bus port (port + 10000) must stay below 32768: see Free
)

// Free returns a loopback port that is free and reserved for tb until it
// ends. withBus also reserves port+10000 (a Redis Cluster node's bus).
func Free(tb testing.TB, withBus bool) int {
	tb.Helper()
	top := high
	if withBus {
		top = 32767 - 10000
	}
	dir := filepath.Join(os.TempDir(), "roomhub-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		tb.Fatal(err)
	}
	for range 500 {
		p := low + rand.IntN(top-low)
		if !reserve(tb, dir, p) {
			continue
		}
		if !withBus || reserve(tb, dir, p+10000) {
			return p
		}
	}
	tb.Fatal("no free port found")
	return 0
}

// Addr is Free as "127.0.0.1:<port>".
func Addr(tb testing.TB) string {
	tb.Helper()
	return "127.0.0.1:" + strconv.Itoa(Free(tb, false))
}

// reserve locks port's file for tb and checks that nothing listens on it.
func reserve(tb testing.TB, dir string, port int) bool {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return false
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		f.Close()
		return false
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		f.Close()
		return false
	}
	l.Close()
	tb.Cleanup(func() { f.Close() }) // closing the file releases the lock
	return true
}
