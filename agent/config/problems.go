package config

import (
	"fmt"
	"strings"
)

// Problem is one finding about a config file: an error, or a notice (a key
// that is accepted but ignored).
type Problem struct {
	// Key is the full dotted key ("streams.commit.interval.ms"); empty for
	// problems of the file as a whole, such as TOML syntax errors.
	Key     string
	Message string
	// Line and Column locate the problem in the file when known (1-based; 0 = unknown).
	Line, Column int
}

// Format writes the problem as one line: "agent.toml:12: streams.x: message".
func (p Problem) Format(source string) string {
	var b strings.Builder
	b.WriteString(source)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	b.WriteString(": ")
	if p.Key != "" {
		b.WriteString(p.Key)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Errors holds every problem that makes a config unusable, so that one run of
// `stoatflow validate` reports them all.
type Errors struct {
	Source   string // file name the problems are reported against
	Problems []Problem
}

func (e *Errors) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Format(e.Source)
	}
	return strings.Join(lines, "\n")
}
