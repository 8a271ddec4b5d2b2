package sse

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Browser reads one stream and, whenever it ends, opens it again with the
// last id it received in Last-Event-ID, as a browser's EventSource does. It
// keeps every message it received (comments apart).
type Browser struct {
	url    string
	header func() http.Header
	every  int
	opens  atomic.Int64

	mu        sync.Mutex
	frames    []Frame
	connected chan struct{} // closed once the first stream is open
	once      sync.Once
	stopOnce  sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// Options of a Browser.
type BrowserOptions struct {
	// Header returns the headers of each request (a fresh token, say); nil:
	// none beyond Last-Event-ID.
	Header func() http.Header
	// Every, when above 0, drops the connection after that many messages, as
	// a flaky network would; the browser then resumes.
	Every int
	// Client makes the requests; nil: http.DefaultClient.
	Client *http.Client
}

// StartBrowser reads url until Stop.
func StartBrowser(url string, o BrowserOptions) *Browser {
	b := &Browser{url: url, header: o.Header, every: o.Every,
		connected: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	client := o.Client
	if client == nil {
		client = http.DefaultClient
	}
	go b.run(client)
	return b
}

func (b *Browser) run(client *http.Client) {
	defer close(b.done)
	last := ""
	for {
		select {
		case <-b.stop:
			return
		default:
		}
		if !b.readOnce(client, &last) {
			select { // a browser waits retry: before it reconnects; shorter here
			case <-b.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// readOnce opens the stream once and reads it until it ends, Every messages
// have arrived, or Stop; it reports whether the stream opened.
func (b *Browser) readOnce(client *http.Client, last *string) bool {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.url, nil)
	if b.header != nil {
		req.Header = b.header()
	}
	if *last != "" {
		req.Header.Set("Last-Event-ID", *last)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	b.opens.Add(1)
	b.once.Do(func() { close(b.connected) })
	stopped := make(chan struct{})
	defer func() { cancel(); <-stopped }()
	go func() {
		defer close(stopped)
		select {
		case <-b.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	n := 0
	_ = Parse(resp.Body, func(f Frame) bool {
		if f.Event == "" && f.ID == "" && f.Data == "" {
			return true // a comment or a retry:
		}
		b.mu.Lock()
		b.frames = append(b.frames, f)
		b.mu.Unlock()
		if f.ID != "" {
			*last = f.ID
		}
		n++
		return b.every <= 0 || n < b.every
	})
	return true
}

// Connected is closed once the first stream has opened.
func (b *Browser) Connected() <-chan struct{} { return b.connected }

// Opens counts the streams opened so far.
func (b *Browser) Opens() int64 { return b.opens.Load() }

// Frames returns what the browser received so far.
func (b *Browser) Frames() []Frame {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Frame(nil), b.frames...)
}

// Has reports whether the browser received the message with this id.
func (b *Browser) Has(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := len(b.frames) - 1; i >= 0; i-- {
		if b.frames[i].ID == id {
			return true
		}
	}
	return false
}

// IDs returns the ids of the messages of type typ received so far.
func (b *Browser) IDs(typ string) []string {
	var ids []string
	for _, f := range b.Frames() {
		if f.Event == typ {
			ids = append(ids, f.ID)
		}
	}
	return ids
}

// Stop ends the browser, waits for it and returns what it received. It may
// be called more than once.
func (b *Browser) Stop() []Frame {
	b.stopOnce.Do(func() { close(b.stop) })
	<-b.done
	return b.Frames()
}
