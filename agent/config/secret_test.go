package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// canary is the secret the tests write; a leak is any output that holds it, or a digest of it.
const canary = "Tr0ub4dor-canary"

// leaks says what in out gives the canary away: the canary itself, or a SHA-256 of a value
// that holds it, as GET /-/reload gave out before.
func leaks(out string, values ...any) string {
	if strings.Contains(out, canary) {
		return "the secret"
	}
	for _, v := range values {
		data, _ := json.Marshal(v)
		sum := sha256.Sum256(data)
		if strings.Contains(out, hex.EncodeToString(sum[:])) {
			return "a SHA-256 of the secret"
		}
	}
	return ""
}

// Every key marked Secret, written right and written wrong: neither the errors, nor the
// notices, nor the reload digests, nor the docs hold its value or a digest of it. The keys
// come from the mark, so a key marked later is tested too.
func TestSecretsNeverShown(t *testing.T) {
	var secrets []*Key
	for _, k := range Keys() {
		if k.Secret {
			secrets = append(secrets, k)
		}
	}
	want := []string{"agent.http.token", "streams.sasl.jaas.config", "streams.ssl.key.password", "streams.ssl.truststore.password",
		"streams.ssl.keystore.password", "streams.schema.registry.url", "streams.basic.auth.user.info", "streams.bearer.auth.token"}
	for _, w := range want {
		found := false
		for _, k := range secrets {
			found = found || k.full == w
		}
		if !found {
			t.Errorf("%s is not marked Secret", w)
		}
	}
	if docs := Markdown() + Usage(); strings.Contains(docs, canary) {
		t.Fatal("the docs hold the canary")
	}

	// values are the ways each key is written: right, of the wrong type, and wrong inside.
	values := func(k *Key) []string {
		quoted := fmt.Sprintf("%q", canary)
		out := []string{quoted, "[" + quoted + ", 1]", "{ x = " + quoted + " }"}
		switch k.Name {
		case "sasl.jaas.config":
			for _, jaas := range []string{
				`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + canary + `";`,
				`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password=` + canary + ` x;`,
				`org.apache.kafka.common.security.plain.PlainLoginModule ` + canary + ` username="u";`,
				`org.apache.kafka.common.security.plain.PlainLoginModule required "` + canary + `";`,
				canary + ` required username="u" password="p";`,
				`org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + canary,
			} {
				out = append(out, "'"+jaas+"'")
			}
		case "schema.registry.url":
			for _, u := range []string{"http://u:" + canary + "@sr:8081", "ftp://u:" + canary + "@sr", "http://u:" + canary + "@sr:port", "http://u:" + canary + "@sr:8081/%zz"} {
				out = append(out, fmt.Sprintf("%q", u), fmt.Sprintf(`["http://v:other@sr:1", %q]`, u))
			}
		}
		return out
	}
	extra := map[string]string{ // what makes the key's value used, so that it is checked
		"sasl.jaas.config":     "security.protocol = \"SASL_SSL\"\nsasl.mechanism = \"PLAIN\"\n",
		"basic.auth.user.info": "schema.registry.url = \"http://sr:8081\"\nbasic.auth.credentials.source = \"USER_INFO\"\n",
		"bearer.auth.token":    "schema.registry.url = \"http://sr:8081\"\n",
	}
	for _, k := range secrets {
		for _, v := range values(k) {
			agent, streams := "", extra[k.Name]
			line := k.Name + " = " + v
			if k.Section == SectionAgent {
				agent = line
			} else {
				streams += line
			}
			for _, prefix := range []string{"", "producer."} {
				if prefix != "" {
					if k.Client == 0 {
						continue
					}
					streams = strings.Replace(streams, k.Name+" =", prefix+k.Name+" =", 1)
				}
				cfg, err := parse(t, agent, streams)
				var out strings.Builder
				if err != nil {
					out.WriteString(err.Error())
				} else {
					for _, n := range cfg.Notices {
						out.WriteString(n.Format("agent.toml") + "\n")
					}
					digests, _ := json.Marshal(cfg.ReloadDigests())
					out.Write(digests)
					fmt.Fprintf(&out, "%+v", cfg.SchemaRegistry.URLs)
					if d := cfg.ReloadDigests()["streams."+prefix+k.Name]; k.Section == SectionStreams && d != secretSet {
						t.Errorf("%s = %s: reload digest %q, want %q", k.Name, v, d, secretSet)
					}
				}
				if what := leaks(out.String(), canary, v); what != "" {
					t.Errorf("%s%s = %s: the output holds %s:\n%s", prefix, k.Name, v, what, out.String())
				}
			}
		}
	}
}

// A secret changed is still a change a reload refuses (the agent compares the values
// itself), while validate --against, knowing the running agent only by its digests, sees
// whether a secret is set but not its value.
func TestSecretReload(t *testing.T) {
	running := mustParse(t, `http.token = "one"`, "")
	changed := mustParse(t, `http.token = "two"`, "")
	unset := mustParse(t, "", "")
	if err := running.CheckReload(changed); err == nil || !strings.Contains(err.Error(), "agent.http.token changed") {
		t.Fatalf("CheckReload of a changed token: %v", err)
	}
	if err := changed.CheckReloadAgainst(running.ReloadDigests()); err != nil {
		t.Fatalf("CheckReloadAgainst of a changed token: %v (the digests cannot tell)", err)
	}
	if err := unset.CheckReloadAgainst(running.ReloadDigests()); err == nil || !strings.Contains(err.Error(), "agent.http.token changed") {
		t.Fatalf("CheckReloadAgainst of a removed token: %v", err)
	}
}

// Credentials in a registry URL are sent as basic auth, and leave the URL the agent shows.
func TestRegistryURLCredentials(t *testing.T) {
	cfg := mustParse(t, "", `schema.registry.url = ["https://ada:`+canary+`@sr-a:8081/x", "https://ada:`+canary+`@sr-b:8081"]`)
	r := cfg.SchemaRegistry
	if r.User != "ada" || r.Password != canary || fmt.Sprint(r.URLs) != "[https://sr-a:8081/x https://sr-b:8081]" {
		t.Fatalf("user %q password %q URLs %v", r.User, r.Password, r.URLs)
	}
}

// A TOML syntax error quotes what it found; in a secret's value that is part of the secret.
func TestSecretSyntaxError(t *testing.T) {
	for _, line := range []string{
		"http.token = " + canary,
		`"http.token" = "` + canary + `" x`,
		"sasl.jaas.config = ['x' '" + canary + "']",
	} {
		_, err := Parse([]byte("[agent]\n"+line+"\n"), t.TempDir(), "agent.toml")
		if err == nil || !strings.Contains(err.Error(), "agent.toml:2:") || !strings.Contains(err.Error(), "TOML syntax error in the value of a secret key") {
			t.Errorf("%s: %v", line, err)
		}
		if err != nil && strings.Contains(err.Error(), canary[:2]) {
			t.Errorf("%s: the error quotes the value: %v", line, err)
		}
	}
	_, err := Parse([]byte("[agent]\nlog.level = debug\n"), t.TempDir(), "agent.toml")
	if err == nil || !strings.Contains(err.Error(), `expected value but found "debug" instead`) {
		t.Errorf("the syntax error of a key that is not secret: %v", err)
	}
}
