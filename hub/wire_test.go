package hub

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// countWire is a Wire that takes every byte at once and counts frames and
// bytes: the hub's side of a delivery, without the kernel's.
type countWire struct {
	frames, bytes atomic.Int64
	closed        atomic.Bool
}

func (w *countWire) TryWrite(b net.Buffers) (int64, error) {
	n := int64(0)
	for _, p := range b {
		n += int64(len(p))
	}
	w.frames.Add(1)
	w.bytes.Add(n)
	return n, nil
}

func (w *countWire) Write(b net.Buffers, _ time.Duration) error {
	_, err := w.TryWrite(b)
	return err
}

func (w *countWire) Close() error { w.closed.Store(true); return nil }

// recordWire keeps what is written, for tests that read the frames.
type recordWire struct {
	mu  sync.Mutex
	buf []byte
}

func (w *recordWire) TryWrite(b net.Buffers) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, p := range b {
		w.buf = append(w.buf, p...)
		n += len(p)
	}
	return int64(n), nil
}

func (w *recordWire) Write(b net.Buffers, _ time.Duration) error {
	_, err := w.TryWrite(b)
	return err
}

func (w *recordWire) Close() error { return nil }

func (w *recordWire) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
