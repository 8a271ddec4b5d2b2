//go:build linux

package api

import (
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/labstack/echo/v4"
	"golang.org/x/sys/unix"
)

// hijack takes a plain HTTP/1.1 connection over from net/http after the
// headers: the hub then writes each frame to the socket itself, without
// chunking, flushing or a goroutine per stream, and the poller tells when the
// client leaves. Nothing is written yet. It reports false, having touched
// nothing, when the connection is HTTP/2 or TLS (net/http's response then
// carries the stream).
func (s *Server) hijack(c echo.Context) (*rawWire, bool) {
	r := c.Request()
	if r.ProtoMajor != 1 || r.TLS != nil || s.poller == nil {
		return nil, false
	}
	conn, _, err := http.NewResponseController(c.Response().Writer).Hijack()
	if err != nil {
		return nil, false
	}
	w := &rawWire{conn: conn, poller: s.poller}
	sc, ok := conn.(syscall.Conn)
	var raw syscall.RawConn
	if ok {
		raw, err = sc.SyscallConn()
	}
	if ok && err == nil {
		err = raw.Control(func(fd uintptr) { w.fd = int(fd) })
	}
	if !ok || err != nil {
		s.log.Error("hijacked connection has no socket; closing it", "remote", r.RemoteAddr)
		_ = conn.Close()
		return nil, true
	}
	_ = conn.SetDeadline(time.Time{})
	return w, true
}

// rawWire is a hijacked socket.
type rawWire struct {
	conn   net.Conn
	fd     int // the socket's descriptor, for TryWrite
	poller *poller
	id     uint64 // the poller's registration, 0 when none
}

// TryWrite writes what the socket's buffer takes now, with one write(2) or
// writev(2) and no waiting. It uses the descriptor directly (the socket is
// non-blocking, so the call cannot block): the stream never calls TryWrite
// after it has begun to Close the wire, so the descriptor is still this
// socket's.
func (w *rawWire) TryWrite(b net.Buffers) (int64, error) {
	for {
		var n int
		var err error
		if len(b) == 1 {
			n, err = rawWrite(w.fd, b[0])
		} else {
			n, err = unix.Writev(w.fd, b)
		}
		switch err {
		case nil:
			return int64(n), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, nil
		}
		return 0, err
	}
}

// rawWrite is write(2) without telling the scheduler: it cannot block on a
// non-blocking socket.
func rawWrite(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Write writes all of b, blocking for at most timeout. The deadline is
// lifted afterwards: TryWrite, which never blocks, must not meet it later.
func (w *rawWire) Write(b net.Buffers, timeout time.Duration) error {
	if err := w.conn.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	var err error
	if len(b) == 1 {
		_, err = w.conn.Write(b[0])
	} else {
		_, err = b.WriteTo(w.conn)
	}
	if err != nil {
		return err
	}
	return w.conn.SetWriteDeadline(time.Time{})
}

// Close stops watching the socket and closes it.
func (w *rawWire) Close() error {
	if w.poller != nil && w.id != 0 {
		w.poller.forget(w.id)
	}
	return w.conn.Close()
}

// watch calls gone once when the client closes the connection.
func (w *rawWire) watch(gone func()) error {
	w.id = w.poller.watch(w.fd, gone)
	return nil
}

// poller is one epoll instance watching every hijacked socket for the
// client's close (EPOLLRDHUP), so that no goroutine per stream sits in a read.
type poller struct {
	epfd   int
	wakeR  int // a pipe's read end: Close writes to wake the loop
	wakeW  int
	mu     sync.Mutex
	next   uint64
	byID   map[uint64]watched
	closed bool
	done   chan struct{}
}

type watched struct {
	fd   int
	gone func()
}

func newPoller() (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		_ = unix.Close(epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, p[0], &ev); err != nil {
		_ = unix.Close(epfd)
		_ = unix.Close(p[0])
		_ = unix.Close(p[1])
		return nil, err
	}
	pl := &poller{epfd: epfd, wakeR: p[0], wakeW: p[1], next: 1, byID: map[uint64]watched{}, done: make(chan struct{})}
	go pl.run()
	return pl, nil
}

// watch registers fd; gone runs (on the poller's goroutine, so it must not
// block) when the peer closes or the socket fails. It returns the
// registration for forget, 0 when fd could not be watched (gone then ran).
func (p *poller) watch(fd int, gone func()) uint64 {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		gone()
		return 0
	}
	id := p.next
	p.next++
	ev := unix.EpollEvent{Events: unix.EPOLLRDHUP}
	ev.Fd, ev.Pad = int32(uint32(id)), int32(uint32(id>>32))
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		p.mu.Unlock()
		gone()
		return 0
	}
	p.byID[id] = watched{fd: fd, gone: gone}
	p.mu.Unlock()
	return id
}

// forget stops watching a registration; the socket must still be open.
func (p *poller) forget(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.byID[id]; ok {
		delete(p.byID, id)
		_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, w.fd, nil)
	}
}

func (p *poller) run() {
	defer close(p.done)
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(p.epfd, events, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if id == 0 { // the wake pipe: Close
				return
			}
			p.mu.Lock()
			w, ok := p.byID[id]
			if ok {
				delete(p.byID, id)
				_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, w.fd, nil)
			}
			p.mu.Unlock()
			if ok {
				w.gone()
			}
		}
	}
}

// Close stops the poller's goroutine; sockets still watched are left alone.
func (p *poller) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	_, _ = unix.Write(p.wakeW, []byte{1})
	<-p.done
	_ = unix.Close(p.epfd)
	_ = unix.Close(p.wakeR)
	_ = unix.Close(p.wakeW)
}
