// Command floor is the least a Go server can serve the load generator with,
// the floor under the hub's memory per stream and CPU per delivery
// (docs/performance.md, goal 4). It answers a stream request with the SSE
// head, hijacks the connection and files it under its room; a publish is
// written, as an SSE frame, to each connection of its room with one write(2),
// on the publishing request's goroutine. No Redis, no authentication, no
// history, no presence, no queue: what is left is net/http, a socket per
// stream and a write per delivery.
//
//	HUB_BIN=/tmp/floor SHAPES="10000:100:200" bash k6/loadgen/run.sh
//
// With FLOOR_REDIS=1 it is the floor of a hub whose instances share events
// through Redis: a publish is one PUBLISH on REDIS_URL, answered when Redis
// answers, and each event reaches the sockets from the floor's one pattern
// subscription, written on the subscription's goroutine. The same client as
// the hub (rueidis), no script, no stream, no key.
//
//	HUB_BIN=/tmp/floor HUB_VARS=FLOOR_REDIS=1 SHAPES="5000:100:200" bash k6/loadgen/run.sh
//
// With FLOOR_REDIS=history a publish also does the commands the contract
// asks of one, without a script, in the same round trip: INCR of the room's
// seq, XADD of the event to its history with the hub's five fields and
// trimming (MAXLEN ~ 10000), an EXPIRE of each (seven days), then the
// PUBLISH (goal 1's floor). With FLOOR_REDIS=script the same five commands
// run in the least script that numbers the event atomically (its seq in the
// history entry and in the message), called by EVALSHA.
//
// It listens on 127.0.0.1:$SERVER_PORT (8090 when unset), as run.sh starts
// a hub, and holds every connection until a write to it fails.
package main

import (
	"context"
	"encoding/json"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

type room struct {
	mu    sync.Mutex
	conns []net.Conn
	seq   int64
}

type server struct {
	mu     sync.Mutex
	rooms  map[int64]*room
	rdb    rueidis.Client // with FLOOR_REDIS: events go through Redis
	mode   string         // FLOOR_REDIS: "history" or "script" (see the package doc), else a bare PUBLISH
	script *rueidis.Lua   // FLOOR_REDIS=script's
}

// bareScript is FLOOR_REDIS=script's publish: KEYS seq and history, ARGV
// channel, type, data, timestamp.
const bareScript = `local seq = redis.call('INCR', KEYS[1])
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', '10000', '*', 'type', ARGV[2], 'data', ARGV[3],
  'publisher_id', '', 'timestamp', ARGV[4], 'seq', seq)
redis.call('EXPIRE', KEYS[1], 604800)
redis.call('EXPIRE', KEYS[2], 604800)
return redis.call('PUBLISH', ARGV[1], ARGV[2] .. ' ' .. seq .. ' ' .. ARGV[3])`

// channelPrefix names a room's pub/sub channel with FLOOR_REDIS.
const channelPrefix = "floor:"

func (s *server) room(id int64) *room {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[id]
	if r == nil {
		r = &room{}
		s.rooms[id] = r
	}
	return r
}

func (s *server) stream(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("room"), 10, 64)
	if err != nil {
		http.Error(w, "bad room", http.StatusBadRequest)
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n: hello\n\n")); err != nil {
		_ = conn.Close()
		return
	}
	rm := s.room(id)
	rm.mu.Lock()
	rm.conns = append(rm.conns, conn)
	rm.mu.Unlock()
}

func (s *server) publish(w http.ResponseWriter, r *http.Request) {
	var p struct {
		RoomID    int64           `json:"roomId"`
		EventType string          `json:"eventType"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.RoomID <= 0 {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	if err := s.send(r.Context(), p.RoomID, p.EventType, p.Data); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte(`{"result":{}}`))
}

// send hands one event on: without Redis straight to its room's sockets,
// else through Redis as FLOOR_REDIS says.
func (s *server) send(ctx context.Context, roomID int64, eventType string, data []byte) error {
	if s.rdb == nil {
		s.deliver(roomID, eventType, data)
		return nil
	}
	ch := channelPrefix + strconv.FormatInt(roomID, 10)
	seqKey, events := ch+":seq", ch+":events"
	if s.mode == "script" {
		ts := time.Now().UTC().Format(time.RFC3339)
		return s.script.Exec(ctx, s.rdb, []string{seqKey, events}, []string{ch, eventType, string(data), ts}).Error()
	}
	msg := make([]byte, 0, len(eventType)+1+len(data))
	msg = append(append(append(msg, eventType...), ' '), data...)
	cmds := rueidis.Commands{s.rdb.B().Publish().Channel(ch).Message(rueidis.BinaryString(msg)).Build()}
	if s.mode == "history" {
		cmds = append(rueidis.Commands{
			s.rdb.B().Incr().Key(seqKey).Build(),
			s.rdb.B().Xadd().Key(events).Maxlen().Almost().Threshold("10000").Id("*").FieldValue().
				FieldValue("type", eventType).FieldValue("data", rueidis.BinaryString(data)).
				FieldValue("publisher_id", "").FieldValue("timestamp", time.Now().UTC().Format(time.RFC3339)).
				FieldValue("seq", "0").Build(),
			s.rdb.B().Expire().Key(seqKey).Seconds(604800).Build(),
			s.rdb.B().Expire().Key(events).Seconds(604800).Build(),
		}, cmds...)
	}
	for _, res := range s.rdb.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	return nil
}

// deliver writes one event to every socket of its room.
func (s *server) deliver(roomID int64, eventType string, data []byte) {
	rm := s.room(roomID)
	rm.mu.Lock()
	rm.seq++
	frame := []byte("id: " + strconv.FormatInt(rm.seq, 10) + "\nevent: " + eventType + "\ndata: ")
	frame = append(append(frame, data...), "\n\n"...)
	kept := rm.conns[:0]
	for _, c := range rm.conns {
		if _, err := c.Write(frame); err != nil {
			_ = c.Close()
			continue
		}
		kept = append(kept, c)
	}
	clear(rm.conns[len(kept):])
	rm.conns = kept
	rm.mu.Unlock()
}

// listen delivers each event published to a room's channel until the
// subscription fails. With FLOOR_SUB=dedicated the subscription has a
// connection of its own, as the hub's listener does; else it shares the
// connection the publishes take, and Redis writes a publish's answer and
// its message to it together.
func (s *server) listen() error {
	onMessage := func(m rueidis.PubSubMessage) {
		id, err := strconv.ParseInt(strings.TrimPrefix(m.Channel, channelPrefix), 10, 64)
		typ, data, ok := strings.Cut(m.Message, " ")
		if ok && !strings.HasPrefix(data, "{") { // FLOOR_REDIS=script: "<type> <seq> <data>"
			_, data, ok = strings.Cut(data, " ")
		}
		if err != nil || !ok {
			return
		}
		s.deliver(id, typ, []byte(data))
	}
	subscribe := s.rdb.B().Psubscribe().Pattern(channelPrefix + "*").Build()
	if os.Getenv("FLOOR_SUB") != "dedicated" {
		return s.rdb.Receive(context.Background(), subscribe, onMessage)
	}
	dc, release := s.rdb.Dedicate()
	defer release()
	wait := dc.SetPubSubHooks(rueidis.PubSubHooks{OnMessage: onMessage})
	if err := dc.Do(context.Background(), subscribe).Error(); err != nil {
		return err
	}
	return <-wait
}

func main() {
	port := os.Getenv("SERVER_PORT")
	if port == "" {
		port = "8090"
	}
	s := &server{rooms: map[int64]*room{}}
	if mode := os.Getenv("FLOOR_REDIS"); mode != "" {
		s.mode = mode
		if mode == "script" {
			s.script = rueidis.NewLuaScript(bareScript)
		}
		opt, err := rueidis.ParseURL(os.Getenv("REDIS_URL"))
		if err != nil {
			log.Fatal(err)
		}
		opt.DisableCache = true
		if s.rdb, err = rueidis.NewClient(opt); err != nil {
			log.Fatal(err)
		}
		go func() { log.Fatal(s.listen()) }()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/rooms/{room}/stream", s.stream)
	mux.HandleFunc("POST /api/v1/notifications/publish", s.publish)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"status":"ok"}`)) })
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, mux))
}
