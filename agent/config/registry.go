package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/stoatflow/stoatflow/luart/suggest"
)

var (
	// byFull indexes every declared key by its full name ("streams.poll.ms").
	byFull = map[string]*Key{}
	// clientByName indexes the client keys by their unprefixed name.
	clientByName = map[string]*Key{}
	// unmappedClient holds the Kafka client keys that are not supported yet.
	unmappedClient = map[string]bool{}
	// defaults holds each key's parsed Default, and defaultsEOS its DefaultEOS.
	defaults, defaultsEOS = map[string]any{}, map[string]any{}
)

// tables are the key tables in the order Keys lists them.
var tables = []*keyTable{&agentKeys, &registryAgentKeys, &streamsKeys, &registryKeys, &clientKeys}

func init() {
	for _, t := range tables {
		for _, k := range t.keys {
			register(k)
		}
	}
	for _, k := range clientKeys.keys {
		clientByName[k.Name] = k
	}
	for _, name := range unmappedClientKeys {
		if _, dup := byFull["streams."+name]; dup {
			panic("config: " + name + " is both mapped and unmapped")
		}
		unmappedClient[name] = true
	}
}

// register indexes a key and parses its defaults. The tables are code, so a bad
// default is a programming error caught by the package's tests.
func register(k *Key) {
	full := k.full
	if _, dup := byFull[full]; dup {
		panic("config: duplicate key " + full)
	}
	byFull[full] = k
	checkSecret(k)
	for alias, canon := range k.Aliases {
		if !slices.Contains(k.Allowed, canon) {
			panic(fmt.Sprintf("config: %s: alias %s names %q, which is not an allowed value", full, alias, canon))
		}
	}
	for _, d := range []struct {
		text string
		into map[string]any
	}{{k.Default, defaults}, {k.DefaultEOS, defaultsEOS}} {
		if d.text == "" {
			continue
		}
		v, err := convert(k, d.text, "")
		if err != nil {
			panic(fmt.Sprintf("config: default of %s: %v", full, err))
		}
		d.into[full] = v
	}
}

// Keys returns every declared key: [agent] keys, then [streams] keys, then the Schema
// Registry keys, then the client keys, each group in declaration order.
func Keys() []*Key {
	out := make([]*Key, 0, len(byFull))
	for _, t := range tables {
		out = append(out, t.keys...)
	}
	return out
}

// lookup finds the key a [section] name denotes. For client keys written with
// a prefix it also returns the prefix ("consumer." etc.). A nil key comes with
// the kind of problem and the message explaining why the name is not accepted.
func lookup(section Section, name string) (k *Key, prefix string, kind Kind, msg string) {
	full := string(section) + "." + name
	if k := byFull[full]; k != nil {
		return k, "", 0, ""
	}
	if section == SectionStreams {
		for _, p := range clientPrefixes {
			rest, ok := strings.CutPrefix(name, p.prefix)
			if !ok {
				continue
			}
			if k := clientByName[rest]; k != nil {
				if k.Client&p.role == 0 {
					return nil, "", KindUnknown, fmt.Sprintf("%s is a %v setting, not a %v one", rest, k.Client, p.role)
				}
				return k, p.prefix, 0, ""
			}
			if byFull["streams."+rest] != nil {
				return nil, "", KindUnknown, fmt.Sprintf("%s is a Kafka Streams setting and cannot be set per client; write it without the %s prefix", rest, p.prefix)
			}
			if unmappedClient[rest] {
				return nil, "", KindUnsupported, "not supported yet: " + rest
			}
			return nil, "", KindUnknown, unknown(full, section, p.prefix)
		}
		for p, what := range unsupportedPrefixes {
			if strings.HasPrefix(name, p) {
				return nil, "", KindUnsupported, "not supported yet: " + what
			}
		}
		if unmappedClient[name] {
			return nil, "", KindUnsupported, "not supported yet: " + name
		}
	}
	if section == "" {
		if k := byFull["streams."+name]; k != nil {
			return nil, "", KindUnknown, fmt.Sprintf("unknown key %q: it belongs in the [streams] table", name)
		}
		if k := byFull["agent."+name]; k != nil {
			return nil, "", KindUnknown, fmt.Sprintf("unknown key %q: it belongs in the [agent] table", name)
		}
	}
	return nil, "", KindUnknown, unknown(full, section, "")
}

// unknown words an unknown key, with the nearest known key when there is one.
// Within a section the suggestion is the bare name, as the user wrote it.
func unknown(full string, section Section, prefix string) string {
	msg := fmt.Sprintf("unknown key %q", strings.TrimPrefix(full, "."))
	other := Section("agent")
	if section == SectionAgent {
		other = SectionStreams
	}
	if section != "" {
		bare := strings.TrimPrefix(full, string(section)+".")
		if k := byFull[string(other)+"."+bare]; k != nil {
			return fmt.Sprintf("%s: it belongs in the [%s] table", msg, other)
		}
	}
	var candidates []string
	if prefix != "" {
		for name := range clientByName {
			candidates = append(candidates, "streams."+prefix+name)
		}
	} else {
		for name := range byFull {
			candidates = append(candidates, name)
		}
	}
	sort.Strings(candidates) // ties go to the same key every run
	best, ok := suggest.Closest(strings.TrimPrefix(full, "."), candidates)
	if !ok {
		return msg
	}
	if section != "" && strings.HasPrefix(best, string(section)+".") {
		best = strings.TrimPrefix(best, string(section)+".")
	}
	return fmt.Sprintf("%s (did you mean %q?)", msg, best)
}
