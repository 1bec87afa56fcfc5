package config

import (
	"fmt"
	"time"
)

// A key is declared once, in its table (keys.go, schemaregistry.go, clientkeys.go), and the
// declaration returns the handle the key is read through:
//
//	httpListen = declare[string](&agentKeys, Key{Name: "http.listen", Type: TypeString, ...})
//	...
//	c.HTTPListen = httpListen.Get(c)
//	b.checkHostPort(httpListen.FullName(), c.HTTPListen, false)
//
// so a misspelled key does not compile. T is the Go type of the key's Type: string for
// TypeString, TypeEnum and TypeClass, int64 for TypeInt and TypeLong, bool,
// time.Duration, []string for TypeList. A key that is never read (ignored, refused, not
// supported yet, or checked only against its allowed values) is declared with add.
//
// A table lists its keys in the order their variables are initialized: the order of
// declaration, as long as a key's literal uses only variables declared above it.
// TestDocsUpToDate notices a change of order, since docs/config.md follows it.

// keyTable is one table of keys: the [agent] keys, the [streams] keys, ...
type keyTable struct {
	section Section
	keys    []*Key
}

// add declares a key of the table.
func (t *keyTable) add(k Key) *Key {
	k.Section = t.section
	k.full = k.FullName()
	t.keys = append(t.keys, &k)
	return &k
}

// keyValue is the Go type a key's value is read as.
type keyValue interface {
	string | int64 | bool | time.Duration | []string
}

// declare declares a key read through a Setting. It panics when T is not the Go type of
// the key's Type: the tables are code, so every test notices.
func declare[T keyValue](t *keyTable, k Key) Setting[T] {
	s := Setting[T]{key: t.add(k)}
	checkGoType[T](s.key)
	return s
}

// declareClient declares a client property, read per client through a ClientSetting.
func declareClient[T keyValue](t *keyTable, k Key) ClientSetting[T] {
	s := ClientSetting[T]{key: t.add(k)}
	checkGoType[T](s.key)
	if s.key.Client == 0 {
		panic("config: " + s.key.full + " is declared as a client property without clients")
	}
	return s
}

func checkGoType[T keyValue](k *Key) {
	var ok bool
	switch any(*new(T)).(type) {
	case string:
		ok = k.Type == TypeString || k.Type == TypeEnum || k.Type == TypeClass
	case int64:
		ok = k.Type == TypeInt || k.Type == TypeLong
	case bool:
		ok = k.Type == TypeBool
	case time.Duration:
		ok = k.Type == TypeDuration
	case []string:
		ok = k.Type == TypeList
	}
	if !ok {
		panic(fmt.Sprintf("config: %s: a %v key cannot be read as %T", k.full, k.Type, *new(T)))
	}
}

// Setting is the handle of an [agent] or [streams] key.
type Setting[T keyValue] struct{ key *Key }

// Key is the declaration of the key.
func (s Setting[T]) Key() *Key { return s.key }

// FullName is the key as problems name it: "streams.commit.interval.ms".
func (s Setting[T]) FullName() string { return s.key.full }

// Get returns the key's value: as set in the file, else its default under the config's
// processing guarantee, else T's zero value.
func (s Setting[T]) Get(c *Config) T {
	v, _ := c.value(s.key.full).(T)
	return v
}

// IsSet reports whether the key was written in the file.
func (s Setting[T]) IsSet(c *Config) bool { return c.isSet(s.key.full) }

// orDeprecated reads key, or its deprecated name when only that is set, as Kafka Streams
// reads its renamed keys.
func orDeprecated[T keyValue](c *Config, key, deprecated Setting[T]) T {
	if !key.IsSet(c) && deprecated.IsSet(c) {
		return deprecated.Get(c)
	}
	return key.Get(c)
}

// ClientSetting is the handle of a Kafka client property, read per client: a prefixed key
// (main.consumer., consumer., producer., admin.) wins over the unprefixed one, which wins
// over the default, as in Kafka Streams.
type ClientSetting[T keyValue] struct{ key *Key }

// Key is the declaration of the key.
func (s ClientSetting[T]) Key() *Key { return s.key }

// FullName is the unprefixed key as problems name it: "streams.linger.ms".
func (s ClientSetting[T]) FullName() string { return s.key.full }

// Get returns the key's value for the client (nil-valued keys give T's zero value).
func (s ClientSetting[T]) Get(cl Client) T {
	v, _ := cl.cfg.value(cl.source(s.key)).(T)
	return v
}

// IsSet reports whether the key is set for the client, prefixed or not.
func (s ClientSetting[T]) IsSet(cl Client) bool { return cl.cfg.isSet(cl.source(s.key)) }

// unprefixed is the value of the unprefixed key, which clients without a prefixed key of
// their own use.
func (s ClientSetting[T]) unprefixed(c *Config) T {
	v, _ := c.value(s.key.full).(T)
	return v
}

// Source is the full name of the key that decides the value for the client: the prefixed
// or unprefixed key that is set, else the unprefixed key.
func (s ClientSetting[T]) Source(cl Client) string { return cl.source(s.key) }
