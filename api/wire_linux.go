//go:build linux

package api

import (
	"errors"
	"net"
	"net/http"
	"os"
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
// client leaves. The socket leaves net's hands too: its descriptor is
// duplicated and net's closed, so that an open stream holds no net.Conn (its
// FD, its two addresses, the runtime's poll descriptor), only the number.
// Nothing is written yet. It reports false, having touched nothing, when the
// connection is HTTP/2 or TLS (net/http's response then carries the stream).
func (s *Server) hijack(c echo.Context) (*rawWire, bool) {
	r := c.Request()
	if r.ProtoMajor != 1 || r.TLS != nil || s.poller == nil {
		return nil, false
	}
	conn, _, err := http.NewResponseController(c.Response().Writer).Hijack()
	if err != nil {
		return nil, false
	}
	fd, err := takeOver(conn)
	if err != nil {
		s.log.Error("hijacked connection has no socket; closing it", "remote", r.RemoteAddr, "err", err)
		return nil, true
	}
	return &rawWire{fd: fd, poller: s.poller}, true
}

// takeOver returns a non-blocking descriptor of conn's socket of its own,
// and closes conn: net lets go of its FD, addresses and poll descriptor,
// and the socket lives on in the descriptor. On error conn is closed too.
func takeOver(conn net.Conn) (int, error) {
	defer conn.Close()
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return -1, errors.New("not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	cerr := raw.Control(func(orig uintptr) {
		fd, err = unix.FcntlInt(orig, unix.F_DUPFD_CLOEXEC, 0)
	})
	if cerr != nil {
		return -1, cerr
	}
	if err != nil {
		return -1, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// rawWire is a hijacked socket: a non-blocking descriptor of its own.
type rawWire struct {
	fd     int
	poller *poller
	id     uint64 // the poller's registration, 0 when none

	// A blocking Write holds the descriptor: Close, which may come from
	// another goroutine meanwhile (the client left, the token expired),
	// wakes it and leaves the close to it, so that the number is never
	// reused under a write.
	mu      sync.Mutex
	writing bool
	closed  bool
}

// maxIovecs is how many buffers one writev(2) takes (IOV_MAX).
const maxIovecs = 1024

// TryWrite writes what the socket's buffer takes now, with one write(2) or
// writev(2) and no waiting. The stream never calls it after it has begun
// to Close the wire, and a blocking Write holds the descriptor, so the
// descriptor is still this socket's.
func (w *rawWire) TryWrite(b net.Buffers) (int64, error) {
	if len(b) > maxIovecs {
		b = b[:maxIovecs]
	}
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

// errWireClosed is a blocking write's error once the wire closed under it or
// the client left.
var errWireClosed = errors.New("connection closed")

// Write writes all of b, for at most timeout: while the socket's buffer is
// full it waits on the poller (a parked goroutine, no thread).
func (w *rawWire) Write(b net.Buffers, timeout time.Duration) error {
	w.mu.Lock()
	if w.closed || w.writing {
		w.mu.Unlock()
		return errWireClosed
	}
	w.writing = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.writing = false
		if w.closed {
			_ = unix.Close(w.fd)
		}
		w.mu.Unlock()
	}()
	var deadline time.Time
	for {
		n, err := w.TryWrite(b)
		if err != nil {
			return err
		}
		b = consume(b, n)
		if len(b) == 0 {
			return nil
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(timeout)
		}
		if w.poller == nil || w.id == 0 {
			return errWireClosed
		}
		if err := w.poller.waitWritable(w.id, deadline); err != nil {
			return err
		}
	}
}

// consume returns b without its first n bytes, leaving b's own slice as it
// was.
func consume(b net.Buffers, n int64) net.Buffers {
	for len(b) > 0 && n >= int64(len(b[0])) {
		n -= int64(len(b[0]))
		b = b[1:]
	}
	if n > 0 {
		b = append(net.Buffers{b[0][n:]}, b[1:]...)
	}
	return b
}

// Close stops watching the socket and closes it (after a Write under way
// returns).
func (w *rawWire) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	writing := w.writing
	w.mu.Unlock()
	if w.poller != nil && w.id != 0 {
		w.poller.forget(w.id) // wakes a Write waiting for room
	}
	if writing {
		return nil // the Write closes it
	}
	return unix.Close(w.fd)
}

// watch calls gone once when the client closes the connection (at once when
// the socket cannot be watched).
func (w *rawWire) watch(gone func()) {
	w.id = w.poller.watch(w.fd, gone)
}

// poller is one epoll instance watching every hijacked socket for the
// client's close (EPOLLRDHUP), so that no goroutine per stream sits in a
// read, and, for a blocking write that found the socket's buffer full, for
// room in it (EPOLLOUT, until the next event).
type poller struct {
	epfd    int
	wakeR   int // a pipe's read end: Close writes to wake the loop
	wakeW   int
	mu      sync.Mutex
	next    uint64
	byID    map[uint64]watched
	waiting map[uint64]chan struct{} // the writes waiting for room, by registration
	closed  bool
	done    chan struct{}
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
	pl := &poller{epfd: epfd, wakeR: p[0], wakeW: p[1], next: 1, byID: map[uint64]watched{},
		waiting: map[uint64]chan struct{}{}, done: make(chan struct{})}
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
	ev := interest(id, false)
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		p.mu.Unlock()
		gone()
		return 0
	}
	p.byID[id] = watched{fd: fd, gone: gone}
	p.mu.Unlock()
	return id
}

// forget stops watching a registration; the socket must still be open. A
// write waiting for room wakes.
func (p *poller) forget(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.byID[id]; ok {
		delete(p.byID, id)
		_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, w.fd, nil)
	}
	p.wakeWriter(id)
}

// wakeWriter wakes the write waiting on id, if any. Call it with p.mu held.
func (p *poller) wakeWriter(id uint64) {
	if ch, ok := p.waiting[id]; ok {
		delete(p.waiting, id)
		close(ch)
	}
}

// interest is what registration id listens for.
func interest(id uint64, out bool) unix.EpollEvent {
	ev := unix.EpollEvent{Events: unix.EPOLLRDHUP}
	if out {
		ev.Events |= unix.EPOLLOUT
	}
	ev.Fd, ev.Pad = int32(uint32(id)), int32(uint32(id>>32))
	return ev
}

// closeOnly puts registration id on fd back to listening for the client's
// close alone. Call it with p.mu held.
func (p *poller) closeOnly(id uint64, fd int) {
	ev := interest(id, false)
	_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, fd, &ev)
}

// waitWritable waits until the socket of registration id has room, the
// registration ends (the client left, the wire closed: errWireClosed) or
// deadline passes (os.ErrDeadlineExceeded).
func (p *poller) waitWritable(id uint64, deadline time.Time) error {
	p.mu.Lock()
	w, ok := p.byID[id]
	if !ok || p.closed {
		p.mu.Unlock()
		return errWireClosed
	}
	ch := make(chan struct{})
	p.waiting[id] = ch
	ev := interest(id, true)
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, w.fd, &ev); err != nil {
		delete(p.waiting, id)
		p.mu.Unlock()
		return err
	}
	p.mu.Unlock()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
		p.mu.Lock()
		_, ok := p.byID[id]
		p.mu.Unlock()
		if !ok {
			return errWireClosed
		}
		return nil
	case <-t.C:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting[id] == ch {
		delete(p.waiting, id)
		if w, ok := p.byID[id]; ok {
			p.closeOnly(id, w.fd)
		}
	}
	return os.ErrDeadlineExceeded
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
			gone := ok && ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
			switch {
			case gone:
				delete(p.byID, id)
				_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, w.fd, nil)
			case ok && ev.Events&unix.EPOLLOUT != 0:
				// Room: the level would report it again and again.
				p.closeOnly(id, w.fd)
			}
			p.wakeWriter(id)
			p.mu.Unlock()
			if gone {
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
	p.mu.Lock()
	for id := range p.waiting {
		p.wakeWriter(id) // no room will be reported any more
	}
	p.mu.Unlock()
	_ = unix.Close(p.epfd)
	_ = unix.Close(p.wakeR)
	_ = unix.Close(p.wakeW)
}
