package config

import (
	"fmt"
	"strings"
)

// Kind is what sort of finding a Problem is.
type Kind int

const (
	// KindUnreadable: the file cannot be read.
	KindUnreadable Kind = iota + 1
	// KindSyntax: the file is not TOML.
	KindSyntax
	// KindUnknown: no such key, or not in this table or for this client.
	KindUnknown
	// KindDuplicate: a key set twice.
	KindDuplicate
	// KindInvalid: a value of the wrong type, out of range, not an allowed value, naming
	// no usable file, or contradicting another key.
	KindInvalid
	// KindMissing: a key that must be set is not.
	KindMissing
	// KindRefused: a key or value StoatFlow refuses, whatever the rest of the file.
	KindRefused
	// KindUnsupported: a key or value not supported yet.
	KindUnsupported
	// KindIgnored: a key that is accepted and does not apply; a notice, not an error.
	KindIgnored
	// KindOverridden: a value that is accepted and replaced by the one Kafka Streams forces;
	// a notice, which the running agent logs as a warning, as Kafka Streams does.
	KindOverridden
	// KindDeprecated: a key that is accepted under a name Kafka deprecated; a notice, which
	// the running agent logs as a warning naming the key to use, as Kafka Streams does.
	KindDeprecated
)

func (k Kind) String() string {
	switch k {
	case KindUnreadable:
		return "unreadable"
	case KindSyntax:
		return "syntax error"
	case KindUnknown:
		return "unknown key"
	case KindDuplicate:
		return "set twice"
	case KindInvalid:
		return "invalid value"
	case KindMissing:
		return "missing"
	case KindRefused:
		return "refused"
	case KindUnsupported:
		return "not supported yet"
	case KindIgnored:
		return "ignored"
	case KindOverridden:
		return "overridden"
	case KindDeprecated:
		return "deprecated"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Notice reports whether problems of this kind leave the config usable.
func (k Kind) Notice() bool { return k == KindIgnored || k == KindOverridden || k == KindDeprecated }

// Problem is one finding about a config file: an error, or a notice (a key
// that is accepted but ignored).
type Problem struct {
	Kind Kind
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
