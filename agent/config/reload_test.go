package config

import (
	"strings"
	"testing"
)

func TestCheckReload(t *testing.T) {
	const start = "commit.interval.ms = 50\nmax.warmup.replicas = 1\n[streams.producer]\nlinger.ms = 5"
	cases := []struct {
		name, agent, streams string
		changed              string // "" = a reload may apply it
	}{
		{name: "nothing changed", streams: start},
		{name: "the same keys spelled otherwise", streams: "\"commit.interval.ms\" = 50\nmax.warmup.replicas = 1\nproducer = { linger.ms = 5 }"},
		{name: "the log level", agent: `log.level = "debug"`, streams: start},
		{name: "the workers", streams: "num.stream.threads = 4\n" + start},
		{name: "a changed value", streams: strings.Replace(start, "= 50", "= 200", 1), changed: "streams.commit.interval.ms"},
		{name: "a value written otherwise", streams: strings.Replace(start, "= 50", `= "50ms"`, 1), changed: "streams.commit.interval.ms"},
		{name: "an added key", streams: start + "\n[streams.consumer]\nfetch.min.bytes = 2", changed: "streams.consumer.fetch.min.bytes"},
		{name: "a removed key", streams: "commit.interval.ms = 50\nmax.warmup.replicas = 1", changed: "streams.producer.linger.ms"},
		{name: "an ignored key", streams: strings.Replace(start, "replicas = 1", "replicas = 2", 1), changed: "streams.max.warmup.replicas"},
		{name: "application.id first", agent: `http.listen = "127.0.0.1:1"`, streams: "application.id = \"other\"\n" + start, changed: "streams.application.id"},
		{name: "by name", agent: `http.listen = "127.0.0.1:1"`, streams: "poll.ms = 1\n" + start, changed: "agent.http.listen"},
	}
	dir := tempDir(t)
	load := func(agent, streams string) *Config {
		t.Helper()
		appID := ""
		if !strings.Contains(streams, "application.id") {
			appID = "application.id = \"wordcount\"\n"
		}
		data := "[agent]\nscripts = [\"wc.lua\"]\n" + agent + "\n[streams]\n" + appID + "bootstrap.servers = \"localhost:9092\"\n" + streams
		cfg, err := Parse([]byte(data), dir, "agent.toml")
		if err != nil {
			t.Fatalf("%s:\n%v", data, err)
		}
		return cfg
	}
	running := load("", start)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := running.CheckReload(load(c.agent, c.streams))
			if c.changed == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			want := "config key " + c.changed + " changed; a reload may change only the scripts, agent.log.level and streams.num.stream.threads (restart the agent to apply it)"
			if err == nil || err.Error() != want {
				t.Fatalf("got %v, want %s", err, want)
			}
		})
	}
	other := tempDir(t)
	moved, err := Parse([]byte("[agent]\nscripts = [\"wc.lua\", \""+other+"/wc.lua\"]\n[streams]\napplication.id = \"wordcount\"\nbootstrap.servers = \"localhost:9092\"\n"+start), dir, "agent.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := running.CheckReload(moved); err != nil {
		t.Fatalf("other scripts: %v", err)
	}
}
