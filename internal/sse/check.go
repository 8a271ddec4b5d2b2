package sse

import "fmt"

// Report is what Check found in what a client received.
type Report struct {
	Expected     int // events accepted by the hub
	Delivered    int // of them, received once
	Duplicated   int
	OutOfOrder   int
	LostWithGap  int // missing, each announced by a system.gap just before the hole
	LostSilently int // missing without one: the hub's worst failure
	Gaps         int // system.gap frames received
	Unexpected   int // other system.* frames, when not allowed
	Problems     []string
}

// OK reports whether nothing was duplicated, reordered or lost silently.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Options says which frames Check counts.
type Options struct {
	// Counts reports whether a frame is one of the events accepted lists
	// (say, its type); nil: any frame with an id.
	Counts func(Frame) bool
	// AllowSystem lists system.* types that may appear besides system.gap
	// (system.lagged, system.evicted) without being a problem.
	AllowSystem []string
}

// Check compares frames, in the order a client received them, with accepted,
// the ids the hub accepted in publish order. Every accepted event must arrive
// exactly once and in order. One that is missing is excused only by a
// system.gap received after the last event before the hole and before the
// next one: a gap anywhere else excuses nothing. Frames whose ids accepted
// does not list (a publish that answered an error but was stored) are
// ignored.
func Check(frames []Frame, accepted []string, o Options) Report {
	rep := Report{Expected: len(accepted)}
	index := make(map[string]int, len(accepted))
	for i, id := range accepted {
		index[id] = i
	}
	allowed := map[string]bool{"system.gap": true}
	for _, t := range o.AllowSystem {
		allowed[t] = true
	}
	seen := map[string]bool{}
	last, gapSince := -1, false
	for _, f := range frames {
		if f.Event == "system.gap" {
			rep.Gaps++
			gapSince = true
			continue
		}
		if len(f.Event) > 7 && f.Event[:7] == "system." {
			if !allowed[f.Event] {
				rep.Unexpected++
				rep.Problems = append(rep.Problems, fmt.Sprintf("unexpected %s %s", f.Event, f.Data))
			}
			continue
		}
		if o.Counts != nil && !o.Counts(f) || f.ID == "" {
			continue
		}
		i, ok := index[f.ID]
		switch {
		case !ok:
			continue
		case seen[f.ID]:
			rep.Duplicated++
			rep.Problems = append(rep.Problems, "duplicate "+f.ID)
			continue
		case i < last:
			rep.OutOfOrder++
			rep.Problems = append(rep.Problems, "out of order "+f.ID)
			continue
		}
		if i > last+1 {
			if gapSince {
				rep.LostWithGap += i - last - 1
			} else {
				rep.LostSilently += i - last - 1
				rep.Problems = append(rep.Problems, fmt.Sprintf("events %d..%d of %d (%s..%s) missing without a system.gap before them",
					last+1, i-1, len(accepted), accepted[last+1], accepted[i-1]))
			}
		}
		seen[f.ID], last, gapSince = true, i, false
		rep.Delivered++
	}
	if last+1 < len(accepted) {
		rep.LostSilently += len(accepted) - last - 1
		rep.Problems = append(rep.Problems, fmt.Sprintf("events %d..%d of %d (%s..) never arrived",
			last+1, len(accepted)-1, len(accepted), accepted[last+1]))
	}
	return rep
}
