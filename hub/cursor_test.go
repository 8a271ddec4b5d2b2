package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"roomhub/internal/testredis"

	"github.com/redis/rueidis"
)

// entry is one history entry a cursor test writes: its id and seq.
type entry struct {
	id  string
	seq int64
}

func seqRun(from, to int64) []entry {
	var out []entry
	for i := from; i <= to; i++ {
		out = append(out, entry{strconv.FormatInt(i, 10) + "-0", i})
	}
	return out
}

// TestCursor_GapRulesAndPages runs a cursor over real history (redis-server)
// written entry by entry: every gap rule, trimmed history, an empty room, a
// lost id, a new epoch, a duplicate, page boundaries and the byte bound.
func TestCursor_GapRulesAndPages(t *testing.T) {
	rdb := testredis.Client(t, testredis.Start(t).Addr())
	h := New(DefaultConfig(), rdb, slog.New(slog.NewTextHandler(io.Discard, nil)), NewMetrics(nil))
	for i, tc := range cursorCases(t) {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, h, rdb, int64(100+i)) })
	}
}

// cursorCase is one row of the cursor's table.
type cursorCase struct {
	name      string
	history   []entry
	data      int // bytes of each event's data beyond {}
	pos       Position
	resumed   bool
	max, size int      // next's bounds; 0: 500 events, 1 MiB
	pages     []string // each next: "gap(requested,oldest) ids… [more]"
	end       Position // where the cursor stands after the last page
}

// cursorCases are the rows: every gap rule, trimmed history, an empty room,
// a lost id, a new epoch, a duplicate, page boundaries and the byte bound.
func cursorCases(t *testing.T) []cursorCase {
	pos := func(id string, seq int64) Position {
		sid, err := ParseStreamID(id)
		if err != nil {
			t.Fatal(err)
		}
		return Position{ID: sid, Seq: seq}
	}
	return []cursorCase{
		{name: "empty room from the start", pages: []string{""}},
		{name: "empty room, a client's id", pos: pos("5-0", 0), resumed: true,
			pages: []string{"gap(5-0,null)"}, end: pos("5-0", 0)},
		{name: "from the start", history: seqRun(1, 3), pages: []string{"1-0 2-0 3-0"}, end: pos("3-0", 3)},
		{name: "a client's id found: its seq is learned", history: seqRun(1, 5), pos: pos("3-0", 0), resumed: true,
			pages: []string{"4-0 5-0"}, end: pos("5-0", 5)},
		{name: "a client's id at the end", history: seqRun(1, 5), pos: pos("5-0", 0), resumed: true,
			pages: []string{""}, end: pos("5-0", 5)},
		{name: "a client's id beyond the end", history: seqRun(1, 5), pos: pos("9-0", 0), resumed: true,
			pages: []string{"gap(9-0,null)"}, end: pos("9-0", 0)},
		{name: "a known position", history: seqRun(1, 5), pos: pos("3-0", 3), pages: []string{"4-0 5-0"}, end: pos("5-0", 5)},
		{name: "a known position at the end: nothing twice", history: seqRun(1, 5), pos: pos("5-0", 5), pages: []string{""}, end: pos("5-0", 5)},
		{name: "trimmed past a known position", history: seqRun(6, 8), pos: pos("3-0", 3),
			pages: []string{"gap(3-0,6-0) 6-0 7-0 8-0"}, end: pos("8-0", 8)},
		{name: "a client's id older than retained", history: seqRun(6, 8), pos: pos("3-0", 0), resumed: true,
			pages: []string{"gap(3-0,6-0) 6-0 7-0 8-0"}, end: pos("8-0", 8)},
		{name: "a client's id lost inside history (failover)", history: []entry{{"1-0", 1}, {"2-0", 2}, {"4-0", 3}},
			pos: pos("3-0", 0), resumed: true, pages: []string{"gap(3-0,1-0) 4-0"}, end: pos("4-0", 3)},
		{name: "the hub's own place inside history", history: []entry{{"1-0", 1}, {"2-0", 2}, {"4-0", 3}},
			pos: pos("3-7", 0), pages: []string{"4-0"}, end: pos("4-0", 3)},
		{name: "just before an epoch's first event", history: []entry{{"7-0", 1}, {"8-0", 2}},
			pos: pos("6-18446744073709551615", 0), pages: []string{"7-0 8-0"}, end: pos("8-0", 2)},
		{name: "a new epoch after a known position", history: []entry{{"8-0", 1}, {"9-0", 2}}, pos: pos("5-0", 5),
			pages: []string{"gap(5-0,8-0) 8-0 9-0"}, end: pos("9-0", 2)},
		{name: "pages", history: seqRun(1, 25), max: 10,
			pages: []string{"1-0 … 10-0 more", "11-0 … 20-0 more", "21-0 … 25-0"}, end: pos("25-0", 25)},
		{name: "a page that fills on a chunk boundary says more", history: seqRun(1, 41), max: 20,
			pages: []string{"1-0 … 20-0 more", "21-0 … 40-0 more", "41-0"}, end: pos("41-0", 41)},
		{name: "a page that ends with history says no more", history: seqRun(1, 40), max: 20,
			pages: []string{"1-0 … 20-0 more", "21-0 … 40-0"}, end: pos("40-0", 40)},
		{name: "the byte bound ends a page early", history: seqRun(1, 5), data: 100, size: 250,
			pages: []string{"1-0 2-0 3-0 more", "4-0 5-0"}, end: pos("5-0", 5)},
	}
}

// run writes the row's history into topic entry by entry, then reads it
// with a cursor page by page.
func (tc cursorCase) run(t *testing.T, h *Hub, rdb rueidis.Client, topic int64) {
	ctx := context.Background()
	for _, e := range tc.history {
		data := `{"x":"` + strings.Repeat("a", tc.data) + `"}`
		testredis.Do(t, rdb, "XADD", EventsKey(topic), e.id, "type", "comment.created", "data", data,
			"publisher_id", "", "timestamp", "2026-11-23T00:00:00.000Z", "seq", strconv.FormatInt(e.seq, 10))
	}
	maxEvents, maxBytes := 500, 1<<20
	if tc.max > 0 {
		maxEvents = tc.max
	}
	if tc.size > 0 {
		maxBytes = tc.size
	}
	c := h.newCursor(topic, tc.pos, tc.resumed, 0)
	for n, want := range tc.pages {
		p, err := c.next(ctx, maxEvents, maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if got := describePage(p); got != want {
			t.Fatalf("page %d: got %q, want %q", n, got, want)
		}
	}
	if c.pos != tc.end {
		t.Fatalf("the cursor stands at %v, want %v", c.pos, tc.end)
	}
}

// describePage writes a page as the table does: the gap, the ids (a run of
// more than three as "first … last"), "more".
func describePage(p cursorPage) string {
	var parts []string
	if p.gap != nil {
		var g gapInfo
		if err := json.Unmarshal(p.gap.Data, &g); err != nil {
			return "bad gap: " + err.Error()
		}
		oldest := "null"
		if g.Oldest != nil {
			oldest = *g.Oldest
		}
		parts = append(parts, fmt.Sprintf("gap(%s,%s)", g.Requested, oldest))
	}
	if n := len(p.events); n > 3 {
		parts = append(parts, p.events[0].ID.String(), "…", p.events[n-1].ID.String())
	} else {
		for _, ev := range p.events {
			parts = append(parts, ev.ID.String())
		}
	}
	if p.more {
		parts = append(parts, "more")
	}
	return strings.Join(parts, " ")
}
