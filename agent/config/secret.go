package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Everything the package tells about a value goes through here, so that a key marked
// Secret (keys.go) never has its value, or anything derived from it, shown: a secret's
// value is known to be set or not, and nothing else.

// notShown stands for a secret value in an error message.
const notShown = "(not shown: the key is secret)"

// secretSet is what ReloadDigests gives for a secret key that is set: the same for every
// value, so that an answer can be compared with another file's for set / not set only. A
// digest of the value, salted or not, could be tested against guessed passwords.
const secretSet = "secret"

// valueText is a value as an error message shows it: as written in TOML, or notShown.
func valueText(k *Key, raw any, text string) string {
	switch {
	case k.Secret:
		return notShown
	case text != "":
		return text
	}
	return show(raw)
}

// checkSecret panics on a secret key declared in a way that would show its value: a
// default (docs and --help print defaults), allowed values (the error of a bad value lists
// them) or a type other than a string or a list of strings. The tables are code, so every
// test notices.
func checkSecret(k *Key) {
	if !k.Secret {
		return
	}
	if k.Default != "" || k.DefaultEOS != "" || k.DefaultDoc != "" || len(k.Allowed) > 0 || len(k.Aliases) > 0 || len(k.Refuse) > 0 {
		panic("config: " + k.full + " is secret: it cannot have a default or a list of values")
	}
	if k.Type != TypeString && k.Type != TypeList {
		panic(fmt.Sprintf("config: %s is secret: its type must be a string or a list, not %v", k.full, k.Type))
	}
}

// redactURL is a URL as a message may show it: with its password replaced (url.Redacted),
// or, unless it parses with a host, not at all (it may be a password written in its place).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return notShown
	}
	return fmt.Sprintf("%q", u.Redacted())
}

// splitFull splits a key's full name as the file's keys are recorded ("streams.producer.x")
// into its section and the name below it.
func splitFull(full string) (Section, string) {
	section, name, _ := strings.Cut(full, ".")
	return Section(section), name
}

// secretLine reports whether line n (1-based) of a TOML file sets a secret key, as in
// `sasl.jaas.config = ...` or `"producer.sasl.jaas.config" = ...`: a syntax error there
// quotes what it found, which is part of the secret.
func secretLine(data []byte, n int) bool {
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return false
	}
	key, _, ok := strings.Cut(lines[n-1], "=")
	if !ok {
		return false
	}
	key = strings.ReplaceAll(strings.ReplaceAll(strings.TrimSpace(key), `"`, ""), "'", "")
	for _, k := range byFull {
		if k.Secret && (key == k.Name || strings.HasSuffix(key, "."+k.Name)) {
			return true
		}
	}
	return false
}
