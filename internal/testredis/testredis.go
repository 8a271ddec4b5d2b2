// Package testredis starts real redis-server processes for tests: a standalone
// server and a 3-master Redis Cluster, on free loopback ports, stopped by
// t.Cleanup.
package testredis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"roomhub/internal/ports"
)

// Server is one redis-server process.
type Server struct {
	Port int
	dir  string
	args []string
	cmd  *exec.Cmd
	tb   testing.TB
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL is the server as a REDIS_URL.
func (s *Server) URL() string { return "redis://" + s.Addr() }

func redisServerPath(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redis-server is not installed: run `make test`, which installs it (apt-get install redis-server)")
	}
	return p
}

// Start launches a standalone redis-server without persistence.
func Start(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, ports.Free(tb, false), nil)
}

// StartWith launches a standalone redis-server with extra arguments
// (e.g. "--appendonly", "yes": Restart then keeps the data).
func StartWith(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	return start(tb, ports.Free(tb, false), extra)
}

func start(tb testing.TB, port int, extra []string) *Server {
	tb.Helper()
	dir := tb.TempDir()
	args := append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"),
	}, extra...)
	s := &Server{Port: port, dir: dir, args: args, tb: tb}
	s.launch()
	tb.Cleanup(s.Kill)
	return s
}

func (s *Server) launch() {
	s.tb.Helper()
	s.cmd = exec.Command(redisServerPath(s.tb), s.args...)
	if err := s.cmd.Start(); err != nil {
		s.tb.Fatalf("starting redis-server: %v", err)
	}
	go func(c *exec.Cmd) { _ = c.Wait() }(s.cmd)
	if err := waitPing(s.Addr(), 10*time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		s.tb.Fatalf("redis-server on %s did not answer: %v\n%s", s.Addr(), err, log)
	}
}

// Kill stops the server at once (SIGKILL): no goodbye to clients.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		s.cmd = nil
		waitClosed(s.Addr(), 5*time.Second)
	}
}

// Pause freezes the server (SIGSTOP): it keeps its data but answers nothing,
// like a Redis stuck in a long fork or a network blip.
func (s *Server) Pause() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// Resume unfreezes a paused server (SIGCONT).
func (s *Server) Resume() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// Restart kills the server and starts it again on the same port, empty (no
// persistence): what a Redis restart does to a cache without AOF or RDB.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	s.launch()
}

// Client returns a rueidis client to addrs, closed by t.Cleanup.
func Client(tb testing.TB, addrs ...string) rueidis.Client {
	tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		tb.Fatalf("redis client: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

// NodeClient returns a client bound to the one server at addr, even when it
// is a cluster node: for per-node commands such as CLIENT LIST and CLIENT KILL,
// which a cluster client would send to any node.
func NodeClient(tb testing.TB, addr string) rueidis.Client {
	tb.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		tb.Fatalf("redis client: %v", err)
	}
	tb.Cleanup(c.Close)
	return c
}

// Cluster is a 3-master Redis Cluster with no replicas.
type Cluster struct {
	Nodes []*Server
}

// Addrs lists the nodes' host:port.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr())
	}
	return out
}

// StartCluster launches three cluster-enabled servers and joins them.
func StartCluster(tb testing.TB) *Cluster {
	tb.Helper()
	c := &Cluster{}
	for i := 0; i < 3; i++ {
		p := ports.Free(tb, true)
		dir := tb.TempDir()
		c.Nodes = append(c.Nodes, start(tb, p, []string{
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "5000",
		}))
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		for _, n := range c.Nodes {
			info, _ := exec.Command("redis-cli", "-p", strconv.Itoa(n.Port), "cluster", "info").Output()
			if !strings.Contains(string(info), "cluster_state:ok") {
				ok = false
			}
		}
		if ok {
			return c
		}
		if time.Now().After(deadline) {
			tb.Fatalf("cluster did not reach cluster_state:ok")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitPing(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := ping(addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	buf := make([]byte, 7)
	n, err := conn.Read(buf)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(string(buf[:n]), "+PONG") {
		return fmt.Errorf("answer %q", buf[:n])
	}
	return nil
}

func waitClosed(addr string, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return
		}
		_ = c.Close()
		time.Sleep(20 * time.Millisecond)
	}
}

// Do runs one command against addr with a short timeout, for test set-up.
func Do(tb testing.TB, c rueidis.Client, args ...string) rueidis.RedisResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Do(ctx, c.B().Arbitrary(args...).Build())
}

// Sentinels is a monitored master with one replica and three sentinels.
type Sentinels struct {
	Master, Replica *Server
	Sentinels       []*Server
	Name            string // the master set's name
}

// URL is the set as a REDIS_URL: redis+sentinel://s1,s2,s3/<name>.
func (s *Sentinels) URL() string {
	var addrs []string
	for _, x := range s.Sentinels {
		addrs = append(addrs, x.Addr())
	}
	return "redis+sentinel://" + strings.Join(addrs, ",") + "/" + s.Name
}

// StartSentinels launches a master, a replica of it and three sentinels
// (quorum 2, down after 1 s), and waits until the sentinels agree on the master.
func StartSentinels(tb testing.TB) *Sentinels {
	tb.Helper()
	s := &Sentinels{Name: "mymaster"}
	s.Master = start(tb, ports.Free(tb, false), nil)
	s.Replica = start(tb, ports.Free(tb, false), []string{"--replicaof", "127.0.0.1", strconv.Itoa(s.Master.Port)})
	for i := 0; i < 3; i++ {
		port := ports.Free(tb, false)
		dir := tb.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\n"+
			"sentinel monitor %s 127.0.0.1 %d 2\nsentinel down-after-milliseconds %s 1000\n"+
			"sentinel failover-timeout %s 5000\n",
			port, dir, filepath.Join(dir, "sentinel.log"), s.Name, s.Master.Port, s.Name, s.Name)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			tb.Fatal(err)
		}
		x := &Server{Port: port, dir: dir, args: []string{conf, "--sentinel"}, tb: tb}
		x.launch()
		tb.Cleanup(x.Kill)
		s.Sentinels = append(s.Sentinels, x)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		for _, x := range s.Sentinels {
			out, _ := exec.Command("redis-cli", "-p", strconv.Itoa(x.Port), "sentinel", "replicas", s.Name).Output()
			if !strings.Contains(string(out), strconv.Itoa(s.Replica.Port)) {
				ok = false
			}
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the sentinels did not see the replica")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// MasterPort asks the first sentinel which port the master is on now.
func (s *Sentinels) MasterPort(tb testing.TB) int {
	tb.Helper()
	out, err := exec.Command("redis-cli", "-p", strconv.Itoa(s.Sentinels[0].Port), "sentinel",
		"get-master-addr-by-name", s.Name).Output()
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// Stat reads a number from redis-server's INFO section: for example
// total_commands_processed (each script counts once, plus every command it
// called) or used_cpu_user (seconds).
func Stat(tb testing.TB, c rueidis.Client, section, field string) float64 {
	tb.Helper()
	info, err := Do(tb, c, "INFO", section).ToString()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseFloat(v, 64)
			return n
		}
	}
	tb.Fatalf("no %s in INFO %s", field, section)
	return 0
}

// CPU is redis-server's CPU time so far (user and system), in seconds.
func CPU(tb testing.TB, c rueidis.Client) float64 {
	tb.Helper()
	return Stat(tb, c, "cpu", "used_cpu_user") + Stat(tb, c, "cpu", "used_cpu_sys")
}
