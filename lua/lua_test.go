package lua

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// topNames are the names a library defines at its top level: its locals
// and local functions.
func topNames(t *testing.T, src string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^local (?:function )?([A-Za-z_][\w, ]*)`).FindAllStringSubmatch(src, -1) {
		for _, n := range strings.Split(m[1], ",") {
			names[strings.TrimSpace(strings.Fields(n + " ")[0])] = true
		}
	}
	return names
}

// uses reports which of names src's code (its comments left out) uses as
// words, but those src defines itself.
func uses(t *testing.T, src string, names map[string]bool) []string {
	own := topNames(t, src)
	code := regexp.MustCompile(`--[^\n]*`).ReplaceAllString(src, "")
	var out []string
	for n := range names {
		if !own[n] && regexp.MustCompile(`\b`+regexp.QuoteMeta(n)+`\b`).MatchString(code) {
			out = append(out, n)
		}
	}
	return out
}

// Each side reads and writes the other's keys only through a library that
// side owns (house III, 2): delivery's scripts reach the inbox through
// inbox_item.lua alone, never the inbox's head (inbox_lib.lua); the inbox's
// scripts write delivery's records through delivery_schedule.lua alone.
func TestLibraries_EachSideOwnsItsKeys(t *testing.T) {
	if !strings.Contains(DeliveryClaim, inboxItem) || strings.Contains(DeliveryClaim, inboxLib) {
		t.Fatal("the claim must carry the inbox's reader library, and not its head")
	}
	if !strings.Contains(InboxAdd, deliverySchedule) {
		t.Fatal("inbox_add.lua must carry delivery's schedule library")
	}
	head := topNames(t, inboxLib)
	schedule := topNames(t, deliverySchedule)
	delete(schedule, "schedule_plan") // what the library offers
	delete(schedule, "schedule")
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) < 10 {
		t.Fatalf("the scripts: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		switch {
		case strings.HasPrefix(f, "delivery_") && f != "delivery_schedule.lua":
			if u := uses(t, src, head); len(u) > 0 {
				t.Errorf("%s uses the inbox's head (%v): read the inbox through inbox_item.lua", f, u)
			}
		case strings.HasPrefix(f, "inbox_"):
			if u := uses(t, src, schedule); len(u) > 0 || strings.Contains(src, "K_DREC") || strings.Contains(src, "K_DDUE") {
				t.Errorf("%s touches delivery's records itself (%v): through delivery_schedule.lua", f, u)
			}
		}
	}
}
