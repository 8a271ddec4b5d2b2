package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"roomhub/internal/sse"
	"roomhub/internal/testbin"
	"roomhub/internal/testbrowser"
	"roomhub/internal/testredis"
)

// A rolling deploy: two instances behind a proxy that follows /health, 20
// clients resuming with Last-Event-ID, events flowing; one instance gets
// SIGTERM and exits. Every client ends with every event exactly once, in
// order.
func TestBinary_SIGTERMBehindAProxyLosesNothing(t *testing.T) {
	t.Parallel()
	bin := testbin.Build(t)
	rs := testredis.Start(t)
	a, cmdA, logsA := testbin.Start(t, bin, "REDIS_URL="+rs.URL(), "MAX_CONNECTIONS_PER_USER=0")
	b, _, _ := testbin.Start(t, bin, "REDIS_URL="+rs.URL(), "MAX_CONNECTIONS_PER_USER=0")
	testbin.WaitHealth(t, a, 200, 15*time.Second)
	testbin.WaitHealth(t, b, 200, 15*time.Second)
	proxy := testbin.StartProxy(t, a, b)

	token := testbin.DevToken(t, a, 9)
	var clients []*sse.Browser
	for i := 0; i < 20; i++ {
		clients = append(clients, sse.StartBrowser(proxy.URL+"/api/v1/rooms/77/stream?token="+token, sse.BrowserOptions{}))
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var open int64
		for _, c := range clients {
			open += c.Opens()
		}
		if open == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 20 clients connected", open)
		}
		time.Sleep(20 * time.Millisecond)
	}

	var accepted []string
	publish := func(n int) {
		for i := 0; i < n; i++ {
			accepted = append(accepted, testbin.Publish(t, nil, b,
				fmt.Sprintf(`{"roomId":77,"eventType":"comment.created","data":{"n":%d}}`, len(accepted))))
			time.Sleep(10 * time.Millisecond)
		}
	}
	publish(50)
	if err := cmdA.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	publish(300) // about 4 s: the instance's streams end, spread, while events flow
	select {
	case <-cmdA.Exited():
	case <-time.After(20 * time.Second):
		t.Fatalf("instance A did not exit within 20 s of SIGTERM\n%s", logsA)
	}
	publish(50)
	last := accepted[len(accepted)-1]
	deadline = time.Now().Add(20 * time.Second)
	for i, c := range clients {
		for {
			ids := c.IDs("comment.created")
			if len(ids) > 0 && ids[len(ids)-1] == last {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("client %d has %d of %d events", i, len(ids), len(accepted))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	moved := 0
	for i, c := range clients {
		c.Stop()
		if r := sse.Check(c.Frames(), accepted, sse.Options{}); !r.OK() || r.Gaps > 0 {
			t.Fatalf("client %d: not every accepted event exactly once, in order, without a gap: %s", i, strings.Join(r.Problems, "; "))
		}
		if c.Opens() > 1 {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no client reconnected: instance A served none of them")
	}
}

// TestBinary_ChromiumKeepsEveryEventAcrossAHubRestart: the demo page in real
// Chromium, behind a proxy, watches a room while its hub is killed and a new
// one started; events go on meanwhile. The page ends with every event exactly
// once, in order.
func TestBinary_ChromiumKeepsEveryEventAcrossAHubRestart(t *testing.T) {
	bin := testbin.Build(t)
	rs := testredis.Start(t)
	a, cmdA, _ := testbin.Start(t, bin, "REDIS_URL="+rs.URL())
	testbin.WaitHealth(t, a, 200, 15*time.Second)
	proxy := testbin.StartProxy(t, a)
	d := testbrowser.Start(t, "demo.mjs", proxy.URL+"/?user=15&rooms=49", t.TempDir())

	var want []string
	publish := func(base string, n int) {
		for i := 0; i < n; i++ {
			text := fmt.Sprintf("event-%02d", len(want))
			testbin.Publish(t, nil, base, `{"roomId":49,"eventType":"comment.created","data":{"text":"`+text+`"}}`)
			want = append(want, text)
			time.Sleep(20 * time.Millisecond)
		}
	}
	publish(a, 10)
	d.Send(t, "TEXT #cards event-09")
	if err := cmdA.Process.Kill(); err != nil { // a crash: no goodbye to the page
		t.Fatal(err)
	}
	<-cmdA.Exited()
	b, _, _ := testbin.Start(t, bin, "REDIS_URL="+rs.URL())
	testbin.WaitHealth(t, b, 200, 15*time.Second)
	proxy.SetBackends(b)
	publish(b, 30) // the page is still finding its way back for most of these
	d.Send(t, "TEXT #cards "+want[len(want)-1])
	got := d.Send(t, `EVAL [...document.querySelectorAll('#cards .card:not(.system) div:last-child')].map((e) => e.textContent).reverse().join(' ')`)["value"].(string)
	if got != strings.Join(want, " ") {
		t.Fatalf("cards %q\nwant  %q", got, strings.Join(want, " "))
	}
	resp, err := http.Get(b + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), `http_requests_total{method="GET",route="/api/v1/stream",status="200"}`) {
		t.Fatal("the page never opened its stream on the new hub")
	}
}
