//go:build linux

package api

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// wirePair returns a hijacked-style wire on one end of a loopback TCP
// connection, watched by its own poller, and the client's end.
func wirePair(t *testing.T) (*rawWire, *net.TCPConn, chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := takeOver(server)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newPoller()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	w := &rawWire{fd: fd, poller: p}
	gone := make(chan struct{})
	if w.watch(func() { close(gone) }); w.id == 0 {
		t.Fatal("not watched")
	}
	return w, client.(*net.TCPConn), gone
}

// fill writes to w until the socket's buffers take nothing more.
func fill(t *testing.T, w *rawWire) int64 {
	t.Helper()
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	var total int64
	for {
		n, err := w.TryWrite(net.Buffers{chunk})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
}

// waitingForRoom returns once a write on w waits on the poller.
func waitingForRoom(t *testing.T, w *rawWire) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		w.poller.mu.Lock()
		_, waiting := w.poller.waiting[w.id]
		w.poller.mu.Unlock()
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no write waited for room within 10s")
		}
	}
}

// A write that finds the socket full waits on the poller and finishes once
// the client reads: every byte arrives, in order.
func TestRawWire_WriteWaitsForRoomThenFinishes(t *testing.T) {
	w, client, _ := wirePair(t)
	defer w.Close()
	before := fill(t, w)
	tail := []byte("the end\n")
	done := make(chan error, 1)
	go func() { done <- w.Write(net.Buffers{[]byte("more "), tail}, time.Minute) }()
	select {
	case err := <-done:
		t.Fatalf("the write returned (%v) while the socket was full", err)
	case <-time.After(50 * time.Millisecond): // not synchronisation: it must still be waiting
	}
	got, err := io.ReadAll(io.LimitReader(client, before+int64(len("more "))+int64(len(tail))))
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(got, []byte("xmore the end\n")) {
		t.Fatalf("the stream ends with %q", got[len(got)-20:])
	}
}

// A write that never finds room ends at its deadline.
func TestRawWire_WriteEndsAtItsDeadline(t *testing.T) {
	w, _, _ := wirePair(t)
	defer w.Close()
	fill(t, w)
	err := w.Write(net.Buffers{[]byte("more")}, 100*time.Millisecond)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline", err)
	}
}

// Close while a write waits wakes the write, which fails.
func TestRawWire_CloseDuringAWriteWakesIt(t *testing.T) {
	w, _, _ := wirePair(t)
	fill(t, w)
	done := make(chan error, 1)
	go func() { done <- w.Write(net.Buffers{[]byte("more")}, time.Minute) }()
	waitingForRoom(t, w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, errWireClosed) {
			t.Fatalf("err = %v, want the wire closed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write did not wake when the wire closed")
	}
}

// The client's close reaches gone; a write waiting then wakes and fails.
func TestRawWire_ClientCloseWakesAWaitingWrite(t *testing.T) {
	w, client, gone := wirePair(t)
	defer w.Close()
	fill(t, w)
	done := make(chan error, 1)
	go func() { done <- w.Write(net.Buffers{[]byte("more")}, time.Minute) }()
	waitingForRoom(t, w)
	_ = client.SetLinger(0)
	_ = client.Close()
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the client's close never reached gone")
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the write succeeded to a closed client")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write did not wake when the client left")
	}
}

func TestConsume_LeavesTheCallersBuffersAlone(t *testing.T) {
	b := net.Buffers{[]byte("ab"), []byte("cde"), []byte("f")}
	for n, want := range map[int64]string{0: "abcdef", 1: "bcdef", 2: "cdef", 4: "ef", 5: "f", 6: ""} {
		got := consume(b, n)
		if s := string(bytes.Join(got, nil)); s != want {
			t.Errorf("consume(%d) = %q, want %q", n, s, want)
		}
		if string(b[0]) != "ab" || string(b[1]) != "cde" {
			t.Fatalf("consume(%d) changed the caller's buffers: %q", n, b)
		}
	}
}
