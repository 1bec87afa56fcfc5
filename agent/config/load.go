package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Load reads and checks a config file. Problems come back together as one
// *Errors; notices about ignored keys are in the Config's Notices.
func Load(path string) (*Config, error) {
	data, err := ReadFile(path, MaxConfigBytes)
	if err != nil {
		return nil, &Errors{Source: path, Problems: []Problem{{Kind: KindUnreadable, Message: fmt.Sprintf("cannot read config: %v", err)}}}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Errors{Source: path, Problems: []Problem{{Kind: KindUnreadable, Message: fmt.Sprintf("cannot resolve path: %v", err)}}}
	}
	cfg, err := Parse(data, filepath.Dir(abs), path)
	if cfg != nil {
		cfg.Path = abs
	}
	return cfg, err
}

// Parse checks a config held in memory. dir is the directory relative paths
// resolve against (the config file's directory); source names the file in
// problems.
func Parse(data []byte, dir, source string) (*Config, error) {
	entries, syntax := flatten(data)
	if syntax != nil {
		return nil, &Errors{Source: source, Problems: []Problem{*syntax}}
	}
	b := newBuilder(dir)
	for _, e := range entries {
		b.apply(e)
	}
	cfg := b.build()
	if len(b.errs) > 0 {
		// Problems of several keys or of missing keys have no line: they go last.
		at := func(p Problem) int {
			if p.Line == 0 {
				return int(^uint(0) >> 1)
			}
			return p.Line
		}
		sort.SliceStable(b.errs, func(i, j int) bool { return at(b.errs[i]) < at(b.errs[j]) })
		return nil, &Errors{Source: source, Problems: b.errs}
	}
	return cfg, nil
}

// entry is one value of the file with its key flattened to a dotted name, so
// that `commit.interval.ms = 100` (nested tables) and `"commit.interval.ms" = 100`
// (one quoted key) are the same setting.
type entry struct {
	section Section // "" for a key outside any table
	name    string  // the key below the section, dotted
	raw     any
	// text is a number, boolean or date-time as the file writes it, which errors show: its
	// decoded value may print otherwise (the float 2.0 as 2, the integer 0x40 as 64).
	text string
	line int
}

func (e entry) full() string {
	if e.section == "" {
		return e.name
	}
	return string(e.section) + "." + e.name
}

// lineProbe fails every decode, which makes the toml library report the
// position of the key being decoded: the only public way to learn a key's line.
type lineProbe struct{}

func (lineProbe) UnmarshalTOML(any) error { return errors.New("position probe") }

func flatten(data []byte) ([]entry, *Problem) {
	if line, err := checkNesting(data); err != nil {
		return nil, &Problem{Kind: KindSyntax, Message: "TOML: " + err.Error(), Line: line}
	}
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		p := Problem{Kind: KindSyntax, Message: "TOML syntax error: " + err.Error()}
		var pe toml.ParseError
		if errors.As(err, &pe) {
			p = Problem{Kind: KindSyntax, Message: "TOML syntax error: " + pe.Message, Line: pe.Position.Line, Column: pe.Position.Col}
			if secretLine(data, pe.Position.Line) {
				p.Message = "TOML syntax error in the value of a secret key (what the parser found is not shown: it is part of the value)"
			}
		}
		return nil, &p
	}
	var out []entry
	var walk func(path []string, prim toml.Primitive) error
	walk = func(path []string, prim toml.Primitive) error {
		var raw any
		if err := md.PrimitiveDecode(prim, &raw); err != nil {
			return err
		}
		if _, isTable := raw.(map[string]any); isTable {
			var sub map[string]toml.Primitive
			if err := md.PrimitiveDecode(prim, &sub); err != nil {
				return err
			}
			for k, v := range sub {
				if err := walk(append(append([]string(nil), path...), k), v); err != nil {
					return err
				}
			}
			return nil
		}
		e := entry{name: strings.Join(path, "."), raw: raw}
		var pe toml.ParseError
		if err := md.PrimitiveDecode(prim, &lineProbe{}); errors.As(err, &pe) {
			e.line = pe.Position.Line
			// The position spans the value's token: a scalar's whole text, only the first
			// item of an array, a string's text without its quotes (show quotes it anyway).
			switch raw.(type) {
			case int64, float64, bool, time.Time:
				if start, end := pe.Position.Start, pe.Position.Start+pe.Position.Len; start >= 0 && start < end && end <= len(data) {
					e.text = string(data[start:end])
				}
			}
		}
		if len(path) > 1 && (path[0] == string(SectionAgent) || path[0] == string(SectionStreams)) {
			e.section, e.name = Section(path[0]), strings.Join(path[1:], ".")
		}
		out = append(out, e)
		return nil
	}
	for k, v := range top {
		if err := walk([]string{k}, v); err != nil {
			return nil, &Problem{Kind: KindSyntax, Message: "TOML: " + err.Error()}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].line != out[j].line {
			return out[i].line < out[j].line
		}
		return out[i].full() < out[j].full()
	})
	return out, nil
}
