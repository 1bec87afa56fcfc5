package config

import "time"

// Client is one Kafka client's view of the client properties: a prefixed key
// (main.consumer., consumer., producer., admin.) wins over the unprefixed one,
// which wins over the default, as in Kafka Streams.
type Client struct {
	cfg      *Config
	role     Role
	prefixes []string // most specific first, ending with ""
}

// Client returns the view of one client: ForConsumer, ForProducer or ForAdmin.
func (c *Config) Client(role Role) Client {
	cl := Client{cfg: c, role: role}
	for _, p := range clientPrefixes {
		if p.role == role {
			cl.prefixes = append(cl.prefixes, p.prefix)
		}
	}
	cl.prefixes = append(cl.prefixes, "")
	return cl
}

// Role is the client this view is for.
func (cl Client) Role() Role { return cl.role }

// Source is the full name of the key that decides name for this client: the
// prefixed or unprefixed key that is set, else the unprefixed key.
func (cl Client) Source(name string) string {
	for _, p := range cl.prefixes {
		full := "streams." + p + name
		if _, ok := cl.cfg.set[full]; ok {
			return full
		}
	}
	return "streams." + name
}

// IsSet reports whether name is set for this client, prefixed or not.
func (cl Client) IsSet(name string) bool {
	return cl.cfg.IsSet(cl.Source(name))
}

// Value is the value of a client key for this client, nil when it has neither
// a value nor a default.
func (cl Client) Value(name string) any {
	return cl.cfg.value(cl.Source(name))
}

// String returns a string, enum or password client key ("" when unset).
func (cl Client) String(name string) string {
	s, _ := cl.Value(name).(string)
	return s
}

// Int returns an integer client key (0 when unset).
func (cl Client) Int(name string) int64 {
	n, _ := cl.Value(name).(int64)
	return n
}

// Bool returns a boolean client key.
func (cl Client) Bool(name string) bool {
	b, _ := cl.Value(name).(bool)
	return b
}

// Duration returns a duration client key (0 when unset).
func (cl Client) Duration(name string) time.Duration {
	d, _ := cl.Value(name).(time.Duration)
	return d
}

// SASL returns the credentials of sasl.jaas.config for this client.
func (cl Client) SASL() (JAAS, error) {
	return ParseJAAS(cl.String("sasl.jaas.config"))
}
