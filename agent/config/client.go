package config

// Client is one Kafka client's view of the client properties, which ClientSettings read.
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

// source is the full name of the key that decides k for this client: the prefixed or
// unprefixed key that is set, else the unprefixed key.
func (cl Client) source(k *Key) string {
	for _, p := range cl.prefixes {
		full := "streams." + p + k.Name
		if _, ok := cl.cfg.set[full]; ok {
			return full
		}
	}
	return k.full
}

// SASL returns the credentials of sasl.jaas.config for this client.
func (cl Client) SASL() (JAAS, error) {
	return ParseJAAS(SASLJAASConfig.Get(cl))
}
