package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// received is what one process's streams got, per room.
type received struct {
	Connected   int              `json:"connected"`
	Failed      int              `json:"failed"`
	FailReasons map[string]int   `json:"failReasons,omitempty"`
	Ended       int              `json:"ended"` // streams the hub closed during the run
	Deliveries  int64            `json:"deliveries"`
	Dups        int64            `json:"duplicates"`
	Seen        map[int][]uint32 `json:"seen"`      // room → per stream, distinct seqs received (sum)
	Latencies   []float64        `json:"latencies"` // ms, a sample
}

// streamSet holds streams and their counters.
type streamSet struct {
	mu        sync.Mutex
	failed    map[string]int
	connected atomic.Int64
	ended     atomic.Int64
	deliv     atomic.Int64
	dups      atomic.Int64
	lat       *sampler
	perStream []*streamState
}

type streamState struct {
	rooms     []int // one room (room stream), or a page stream's rooms
	connected atomic.Bool
	mu        sync.Mutex
	seen      map[uint64]bool // room<<32 | seq
}

// streamRooms is stream i's rooms: i's room, and on page streams the next ones
// spaced evenly over all rooms, so that every room has the same members.
func streamRooms(c config, i int) []int {
	if c.pageRooms == 0 {
		return []int{i%c.rooms + 1}
	}
	var rs []int
	for k := 0; k < c.pageRooms; k++ {
		rs = append(rs, (i+k*c.rooms/c.pageRooms)%c.rooms+1)
	}
	return rs
}

func openStreams(ctx context.Context, c config, first, count int) *streamSet {
	set := &streamSet{failed: map[string]int{}, lat: newSampler(200_000)}
	tr := &http.Transport{MaxIdleConnsPerHost: -1, DisableCompression: true, MaxConnsPerHost: 0,
		DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}
	client := &http.Client{Transport: tr}
	sem := make(chan struct{}, 200) // connects in flight
	var wg sync.WaitGroup
	for i := first; i < first+count; i++ {
		st := &streamState{rooms: streamRooms(c, i), seen: map[uint64]bool{}}
		set.perStream = append(set.perStream, st)
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			err := readStream(ctx, client, c, i, st, set, func() { <-sem; wg.Done() })
			if err != nil && ctx.Err() == nil {
				set.ended.Add(1)
			}
		}(i)
	}
	wg.Wait()
	return set
}

// streamRequest is stream i's request for rooms: the hub's room stream, its
// page stream (c.pageRooms), or the peer's.
func streamRequest(ctx context.Context, c config, i int, rooms []int) *http.Request {
	base, user := c.hubs[i%len(c.hubs)], int64(i+1)
	if c.peer == peerCentrifugo {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, centrifugoStreamURL(base, c.secret, user, rooms[0]), nil)
		return req
	}
	url := fmt.Sprintf("%s/api/v1/rooms/%d/stream", base, rooms[0])
	if c.pageRooms > 0 {
		ids := make([]string, len(rooms))
		for k, r := range rooms {
			ids[k] = strconv.Itoa(r)
		}
		url = base + "/api/v1/stream?rooms=" + strings.Join(ids, ",")
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token(c.secret, user))
	return req
}

// readStream connects stream i, calls connected once it is (or failed), then
// reads events until ctx ends.
func readStream(ctx context.Context, client *http.Client, c config, i int, st *streamState, set *streamSet, connected func()) error {
	once := sync.OnceFunc(connected)
	defer once()
	req := streamRequest(ctx, c, i, st.rooms)
	resp, err := client.Do(req)
	if err != nil {
		set.fail(shortErr(err))
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		set.fail("status " + strconv.Itoa(resp.StatusCode))
		return nil
	}
	set.connected.Add(1)
	st.connected.Store(true)
	once()
	br := bufio.NewReaderSize(resp.Body, 4096)
	var event string
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		switch {
		case bytes.HasPrefix(line, []byte("event: ")):
			event = string(bytes.TrimSpace(line[7:]))
		case bytes.HasPrefix(line, []byte("data: ")) && (event == "comment.created" || c.peer == peerCentrifugo):
			now := time.Now().UnixNano()
			var d struct {
				T      int64  `json:"t"`
				Seq    uint32 `json:"seq"`
				RoomID int    `json:"roomId"` // page streams only
			}
			if c.peer == peerCentrifugo {
				var ok bool
				if d.T, d.Seq, ok = centrifugoEvent(line[6:]); !ok {
					continue
				}
			} else if json.Unmarshal(line[6:], &d) != nil {
				continue
			}
			if d.RoomID == 0 {
				d.RoomID = st.rooms[0]
			}
			set.deliv.Add(1)
			set.lat.add(float64(now-d.T) / 1e6)
			key := uint64(d.RoomID)<<32 | uint64(d.Seq)
			st.mu.Lock()
			if st.seen[key] {
				set.dups.Add(1)
			}
			st.seen[key] = true
			st.mu.Unlock()
		case len(bytes.TrimSpace(line)) == 0:
			event = ""
		}
	}
}

func (s *streamSet) fail(reason string) {
	s.mu.Lock()
	s.failed[reason]++
	s.mu.Unlock()
}

func shortErr(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

func (s *streamSet) result() received {
	r := received{Connected: int(s.connected.Load()), Ended: int(s.ended.Load()), Deliveries: s.deliv.Load(),
		Dups: s.dups.Load(), Seen: map[int][]uint32{}, Latencies: s.lat.values()}
	s.mu.Lock()
	for k, v := range s.failed {
		r.Failed += v
		if r.FailReasons == nil {
			r.FailReasons = map[string]int{}
		}
		r.FailReasons[k] = v
	}
	s.mu.Unlock()
	for _, st := range s.perStream {
		if !st.connected.Load() {
			continue // it never listened: nothing was expected of it
		}
		st.mu.Lock()
		per := map[int]uint32{}
		for key := range st.seen {
			per[int(key>>32)]++
		}
		for _, room := range st.rooms {
			r.Seen[room] = append(r.Seen[room], per[room])
		}
		st.mu.Unlock()
	}
	return r
}

// runChild holds its slice of streams until its stdin closes (the parent is
// done), then prints what they received.
func runChild(ctx context.Context, c config) error {
	set := openStreams(ctx, c, c.firstUser, c.childCount)
	fmt.Println("connected") // the parent waits for this line
	_, _ = io.Copy(io.Discard, os.Stdin)
	return json.NewEncoder(os.Stdout).Encode(set.result())
}

// ---- the parent: children, publisher, report ----

type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startChild(c config, first, count int) (*child, error) {
	args := append([]string{}, os.Args[1:]...)
	args = append(args, "-child-first", strconv.Itoa(first), "-child-count", strconv.Itoa(count))
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &child{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}, nil
}
