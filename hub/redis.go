package hub

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"roomhub/internal/env"
)

// RedisOptions turns REDIS_URL into client options. It accepts redis:// and
// rediss:// URLs (with user, password and database), redis+cluster://h1:p1,h2:p2,
// redis+sentinel://[:password@]s1:p1,s2:p2/<master name> (the password is the
// master's and the sentinels'), or a plain comma list of host:port addresses;
// rueidis recognises a cluster by itself from any one node.
func RedisOptions(url string) (rueidis.ClientOption, error) {
	var opt rueidis.ClientOption
	switch {
	case strings.HasPrefix(url, "redis+cluster://"):
		rest := strings.TrimPrefix(url, "redis+cluster://")
		creds := ""
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			creds, rest = rest[:i], rest[i+1:]
		}
		addrs := splitAddrs(strings.TrimSuffix(rest, "/"))
		if len(addrs) == 0 {
			return opt, fmt.Errorf("redis+cluster:// needs at least one host:port")
		}
		first, err := rueidis.ParseURL("redis://" + creds + "@" + addrs[0])
		if creds == "" {
			first, err = rueidis.ParseURL("redis://" + addrs[0])
		}
		if err != nil {
			return opt, err
		}
		opt = first
		opt.InitAddress = addrs
	case strings.HasPrefix(url, "redis+sentinel://"):
		// redis+sentinel://[:password@]host:port[,host:port]/<master name>
		rest := strings.TrimPrefix(url, "redis+sentinel://")
		password := ""
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			creds := rest[:i]
			rest = rest[i+1:]
			_, password, _ = strings.Cut(creds, ":")
		}
		hosts, name, _ := strings.Cut(rest, "/")
		opt.InitAddress = splitAddrs(hosts)
		if len(opt.InitAddress) == 0 || name == "" || strings.Contains(name, "/") {
			return opt, fmt.Errorf("redis+sentinel:// needs host:port[,host:port]/<master name>")
		}
		opt.Sentinel = rueidis.SentinelOption{MasterSet: name, Password: password}
		opt.Password = password
	case strings.Contains(url, "://"):
		var err error
		if opt, err = rueidis.ParseURL(url); err != nil {
			return opt, err
		}
	default:
		opt.InitAddress = splitAddrs(url)
		if len(opt.InitAddress) == 0 {
			return opt, fmt.Errorf("no address")
		}
	}
	for _, a := range opt.InitAddress {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return opt, fmt.Errorf("%q is not host:port", a) // a bare word would be dialed for ever
		} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return opt, fmt.Errorf("%q has no port 1-65535", a)
		}
	}
	// The hub never reads through the client-side cache, so it does not pay for
	// CLIENT TRACKING.
	opt.DisableCache = true
	opt.ConnWriteTimeout = 5 * time.Second
	// 64 KiB each way per connection, not the client's 0.5 MiB: a larger
	// pipeline is flushed in parts, a larger reply read through, and at
	// 10,000 streams the defaults held ~5 MB (docs/performance.md, goal 4).
	opt.ReadBufferEachConn, opt.WriteBufferEachConn = 64<<10, 64<<10
	opt.Dialer.Timeout = 3 * time.Second
	return opt, nil
}

// Redact hides the credentials of every URL in s (a URL itself, or an error
// that quotes one): "redis://u:pw@h" becomes "redis://(redacted)@h".
func Redact(s string) string { return env.Redact(s) }

// EmbeddedRedisOptions are the client options for the in-process miniredis of
// dev mode: miniredis rejects CLIENT TRACKING, and on RESP3 a connection that
// has subscribed would block other commands.
func EmbeddedRedisOptions(addr string) rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress:       []string{addr},
		DisableCache:      true,
		AlwaysRESP2:       true,
		ForceSingleClient: true,
	}
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// redisTimeout bounds one Redis call made on behalf of a request or a repair.
const redisTimeout = 3 * time.Second

// Redis is the hub's client with the rules every call follows: bounded by
// redisTimeout (the caller's context may end it sooner), timed in
// redis_command_duration_seconds, and its error classed by RedisErr. The
// packages built on the core (the inbox) make their calls through it too.
type Redis struct {
	rueidis.Client
	metrics *Metrics
	sharded bool
	known   scriptsKnown // where Redis has which script (execMany)
}

// newRedis wraps rdb (nil in tests that need no Redis).
func newRedis(rdb rueidis.Client, m *Metrics) *Redis {
	return &Redis{Client: rdb, metrics: m, sharded: rdb != nil && rdb.Mode() == rueidis.ClientModeCluster}
}

// Sharded reports whether Redis is a cluster: pub/sub is sharded (SPUBLISH),
// and keys of different slots never meet in one script.
func (r *Redis) Sharded() bool { return r.sharded }

// Script is a Lua script the hub runs, alone or many at once.
type Script struct {
	*rueidis.Lua
	sha1 string
	src  string
}

// NewScript prepares src to run with Run or RunMany.
func NewScript(src string) Script {
	sum := sha1.Sum([]byte(src))
	return Script{Lua: rueidis.NewLuaScript(src), sha1: hex.EncodeToString(sum[:]), src: src}
}

// pipeliner is what execMany sends through: the shared client, or a
// connection of its own (rueidis.DedicatedClient).
type pipeliner interface {
	B() rueidis.Builder
	DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult
}

// execMany runs the script once per exec in one pipeline (on a cluster, one
// per node involved), in order. Unlike rueidis' ExecMulti it does not SCRIPT
// LOAD on every node each time: it sends EVALSHA, and EVAL (the source) for
// the first of the calls that share a node (on a cluster, a slot) where
// Redis is not known to have the script yet (known: a call of it succeeded
// there), so that Redis learns it before the rest. Were that call EVALSHA
// too and answered NOSCRIPT, another client could load the script
// meanwhile: the calls behind it would succeed, and run before it once it
// was sent again. Calls answered NOSCRIPT (Redis lost its scripts: a
// restart, SCRIPT FLUSH) are sent again as EVAL, in order, and the node is
// no longer known.
func (r *Redis) execMany(ctx context.Context, rdb pipeliner, s Script, execs []rueidis.LuaExec) []rueidis.RedisResult {
	known := r.known.of(s.sha1)
	cmds := make(rueidis.Commands, len(execs))
	for i, e := range execs {
		cmds[i] = s.cmd(rdb.B(), e, false)
	}
	if len(execs) > 1 {
		calls := map[int]int{}
		for _, c := range cmds {
			calls[r.bucket(c)]++
		}
		for i, c := range cmds {
			if b := r.bucket(c); calls[b] > 1 && !known.has(b) {
				cmds[i], calls[b] = s.cmd(rdb.B(), execs[i], true), 0 // the node's first
			}
		}
	}
	results := rdb.DoMulti(ctx, cmds...)
	var again rueidis.Commands
	var at []int
	for i, res := range results {
		err := res.Error()
		known.learned(r.bucket(cmds[i]), err)
		if IsNoScript(err) {
			again = append(again, s.cmd(rdb.B(), execs[i], true))
			at = append(at, i)
		}
	}
	if len(again) > 0 {
		for j, res := range rdb.DoMulti(ctx, again...) {
			results[at[j]] = res
		}
	}
	return results
}

// bucket is where a command's script must be known: on a cluster its slot
// (a call without keys, which may go to any node, is -1: never known), on
// one Redis 0.
func (r *Redis) bucket(c rueidis.Completed) int {
	if !r.sharded {
		return 0
	}
	slot := int(c.Slot() &^ (1 << 15)) // less rueidis' flag for commands without a slot
	if slot >= clusterSlots {
		return -1
	}
	return slot
}

// clusterSlots is a Redis Cluster's number of hash slots.
const clusterSlots = 16384

// scriptsKnown records, per script, where Redis is known to have it.
type scriptsKnown struct {
	mu   sync.Mutex
	sets map[string]*knownSet // by sha1
}

// of is the script's record (made empty the first time).
func (k *scriptsKnown) of(sha string) *knownSet {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sets == nil {
		k.sets = map[string]*knownSet{}
	}
	set := k.sets[sha]
	if set == nil {
		set = new(knownSet)
		k.sets[sha] = set
	}
	return set
}

// knownSet is one script's buckets (Redis.bucket) where Redis is known to
// have it, a bit each; -1 is never known.
type knownSet [clusterSlots / 64]atomic.Uint64

func (k *knownSet) has(b int) bool { return b >= 0 && k[b/64].Load()&(1<<(b%64)) != 0 }

// learned records what Redis answered a call in bucket b: it has the
// script (an answer), or not (NOSCRIPT).
func (k *knownSet) learned(b int, err error) {
	switch {
	case b < 0:
	case IsNoScript(err):
		k[b/64].And(^(uint64(1) << (b % 64)))
	case err == nil && !k.has(b):
		k[b/64].Or(1 << (b % 64))
	}
}

// cmd is the EVALSHA of one call of s, or its EVAL (with the source) when
// withSource.
func (s Script) cmd(b rueidis.Builder, e rueidis.LuaExec, withSource bool) rueidis.Completed {
	if withSource {
		return b.Eval().Script(s.src).Numkeys(int64(len(e.Keys))).Key(e.Keys...).Arg(e.Args...).Build()
	}
	return b.Evalsha().Sha1(s.sha1).Numkeys(int64(len(e.Keys))).Key(e.Keys...).Arg(e.Args...).Build()
}

// ScriptCmd is one call of s for a pipeline that mixes it with other
// commands (DoMany): EVALSHA where Redis is known to have s, else EVAL with
// the source, so that a pipeline never runs NOSCRIPT first and its next
// call later. Learned takes what Redis answered.
func (r *Redis) ScriptCmd(s Script, e rueidis.LuaExec) rueidis.Completed {
	c := s.cmd(r.B(), e, false)
	if !r.known.of(s.sha1).has(r.bucket(c)) {
		c = s.cmd(r.B(), e, true)
	}
	return c
}

// Learned records what Redis answered c, a call of s: it has s (an
// answer), or not (NOSCRIPT).
func (r *Redis) Learned(s Script, c rueidis.Completed, err error) {
	r.known.of(s.sha1).learned(r.bucket(c), err)
}

// IsNoScript says whether err is Redis' NOSCRIPT: an EVALSHA of a script it
// does not know.
func IsNoScript(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && e.IsNoScript()
}

// Call sends one command by the rules of Redis. as reads the reply, e.g.
// rueidis.RedisResult.AsInt64, or NoReply for none.
func Call[T any](r *Redis, ctx context.Context, cmd rueidis.Completed, as func(rueidis.RedisResult) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	start := time.Now()
	v, err := as(r.Do(ctx, cmd))
	r.metrics.observeRedis(start)
	return v, RedisErr(err)
}

// Run is Call for a Lua script.
func Run[T any](r *Redis, ctx context.Context, s Script, keys, args []string, as func(rueidis.RedisResult) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	start := time.Now()
	v, err := as(s.Exec(ctx, r.Client, keys, args))
	r.metrics.observeRedis(start)
	return v, RedisErr(err)
}

// RunMany is Run for many calls of one script in one pipeline (on a cluster,
// one per node involved); each result's error is the caller's to class.
func RunMany(r *Redis, ctx context.Context, s Script, execs []rueidis.LuaExec) []rueidis.RedisResult {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	start := time.Now()
	results := r.execMany(ctx, r.Client, s, execs)
	r.metrics.observeRedis(start)
	return results
}

// RunChunked is RunMany for a long run of calls: pipelines of chunk calls
// one after the other, each under Call's time limit, so that the run as a
// whole is never cut off by it. On one Redis the run goes through a
// connection of its own: other callers' commands never queue behind it on
// the shared pipelines, and Redis serves them between its scripts. After a
// chunk that could not reach Redis, the rest answer that error, unsent.
func RunChunked(r *Redis, ctx context.Context, s Script, execs []rueidis.LuaExec, chunk int) []rueidis.RedisResult {
	if len(execs) <= chunk {
		return RunMany(r, ctx, s, execs)
	}
	var p pipeliner = r.Client
	if !r.sharded {
		dc, release := r.Dedicate()
		defer release()
		p = dc
	}
	results := make([]rueidis.RedisResult, 0, len(execs))
	for start := 0; start < len(execs); start += chunk {
		cctx, cancel := context.WithTimeout(ctx, redisTimeout)
		began := time.Now()
		part := r.execMany(cctx, p, s, execs[start:min(start+chunk, len(execs))])
		r.metrics.observeRedis(began)
		cancel()
		results = append(results, part...)
		for _, res := range part {
			if _, answered := rueidis.IsRedisErr(res.Error()); res.Error() != nil && !answered && !rueidis.IsRedisNil(res.Error()) {
				for len(results) < len(execs) {
					results = append(results, res)
				}
				return results
			}
		}
	}
	return results
}

// CallMany is Call for commands sent in one pipeline; it returns the first
// error, classed.
func CallMany(r *Redis, ctx context.Context, cmds rueidis.Commands) error {
	for _, res := range DoMany(r, ctx, cmds) {
		if err := res.Error(); err != nil {
			return RedisErr(err)
		}
	}
	return nil
}

// DoMany sends commands in one pipeline under Call's time limit and
// returns each reply; classing each error (RedisErr) is the caller's.
func DoMany(r *Redis, ctx context.Context, cmds rueidis.Commands) []rueidis.RedisResult {
	return DoManyOn(r, ctx, nil, cmds)
}

// SumMany sends commands with integer replies (ZCARD, XLEN…) in one
// pipeline and adds the replies up.
func SumMany(r *Redis, ctx context.Context, cmds rueidis.Commands) (int64, error) {
	var sum int64
	for _, res := range DoMany(r, ctx, cmds) {
		n, err := res.AsInt64()
		if err != nil {
			return 0, RedisErr(err)
		}
		sum += n
	}
	return sum, nil
}

// DoManyOn is DoMany through conn, a connection of the caller's own (nil:
// the shared client's).
func DoManyOn(r *Redis, ctx context.Context, conn rueidis.DedicatedClient, cmds rueidis.Commands) []rueidis.RedisResult {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	start := time.Now()
	var results []rueidis.RedisResult
	if conn != nil {
		results = conn.DoMulti(ctx, cmds...)
	} else {
		results = r.DoMulti(ctx, cmds...)
	}
	r.metrics.observeRedis(start)
	return results
}

// runWaiting runs s, then WAIT for PUBLISH_WAIT_REPLICAS replicas, in one
// pipeline: on one connection, so that the WAIT covers the script's writes.
// It returns the script's reply and how many replicas acknowledged.
func runWaiting(h *Hub, ctx context.Context, s Script, keys, args []string) ([]rueidis.RedisMessage, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout+h.cfg.PublishWait)
	defer cancel()
	cmds := func(eval rueidis.Completed) rueidis.Commands {
		return rueidis.Commands{eval, h.rdb.B().Wait().Numreplicas(int64(h.cfg.PublishWaitReplicas)).
			Timeout(h.cfg.PublishWait.Milliseconds()).Build()}
	}
	start := time.Now()
	call := rueidis.LuaExec{Keys: keys, Args: args}
	res := h.rdb.DoMulti(ctx, cmds(s.cmd(h.rdb.B(), call, false))...)
	if IsNoScript(res[0].Error()) {
		res = h.rdb.DoMulti(ctx, cmds(s.cmd(h.rdb.B(), call, true))...)
	}
	h.metrics.observeRedis(start)
	arr, err := res[0].ToArray()
	if err != nil {
		return nil, 0, RedisErr(err)
	}
	acked, err := res[1].AsInt64()
	return arr, acked, RedisErr(err)
}

// NoReply reads a reply for its error only.
func NoReply(r rueidis.RedisResult) (struct{}, error) { return struct{}{}, r.Error() }

// Detach keeps ctx's deadline but not its cancellation. Writes that must not
// be abandoned halfway use it: rueidis may give up on a command whose context
// is cancelled (a client disconnecting) while Redis still runs it later, after
// a write that was meant to follow it.
func Detach(ctx context.Context) (context.Context, context.CancelFunc) {
	limit := time.Now().Add(redisTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(limit) {
		limit = d
	}
	return context.WithDeadline(context.WithoutCancel(ctx), limit)
}

// RedisErr marks an error from a Redis call as ErrRedis (unreachable or timed
// out) or ErrRedisReply (Redis answered with an error), keeping the cause.
func RedisErr(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := rueidis.IsRedisErr(err); ok {
		return fmt.Errorf("%w: %w", ErrRedisReply, err)
	}
	return fmt.Errorf("%w: %w", ErrRedis, err)
}
