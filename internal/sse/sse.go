// Package sse is the tests' SSE toolkit: one parser of the byte stream, a
// client that reconnects and resumes as a browser's EventSource does, and
// one exactly-once checker with the strict gap rule.
package sse

import (
	"bufio"
	"io"
	"regexp"
	"strings"
)

// Frame is one SSE message, or a comment line.
type Frame struct {
	Event, ID, Data, Comment, Retry string
}

// Parse reads an SSE byte stream and hands each message (or comment) to emit
// until the stream ends or emit returns false. Lines may be up to 1 MiB.
func Parse(r io.Reader, emit func(Frame) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var f Frame
	empty := true
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if !empty && !emit(f) {
				return nil
			}
			f, empty = Frame{}, true
			continue
		}
		empty = false
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			f.Comment = value
		case "event":
			f.Event = value
		case "id":
			f.ID = value
		case "data":
			f.Data = value
		case "retry":
			f.Retry = value
		}
	}
	return sc.Err()
}

// PageIDChars matches an id of a page stream as DESIGN.md allows it: only
// [A-Za-z0-9._~:,-], at least one.
var PageIDChars = regexp.MustCompile(`^[A-Za-z0-9._~:,-]+$`)
