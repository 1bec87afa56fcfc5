package config

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
)

// defaultText is a key's default as the docs show it.
func defaultText(k *Key) string {
	d := k.Default
	if k.DefaultDoc != "" {
		d = k.DefaultDoc
	}
	if d == "" {
		if k.Required {
			return "required"
		}
		return ""
	}
	if k.DefaultEOS != "" {
		d += " (" + k.DefaultEOS + " under exactly_once_v2)"
	}
	return d
}

func typeText(k *Key) string {
	if k.Secret {
		return k.Type.String() + ", secret"
	}
	if len(k.Allowed) > 0 && (k.Type == TypeEnum || k.Type == TypeClass || k.Type == TypeList) {
		return k.Type.String() + ": " + strings.Join(quoteEmpty(k.Allowed), " | ")
	}
	if k.Max != 0 && k.Type == TypeDuration {
		return fmt.Sprintf("duration, at most %d ms", k.Max)
	}
	if k.Max != 0 {
		return fmt.Sprintf("%s, at most %d", k.Type, k.Max)
	}
	return k.Type.String()
}

func quoteEmpty(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s
		if s == "" {
			out[i] = `""`
		}
	}
	return out
}

func cell(s string) string {
	return strings.ReplaceAll(s, "|", "\\|")
}

func codeCell(s string) string {
	if s == "" || s == "required" {
		return s
	}
	return "`" + s + "`"
}

// Markdown renders docs/config.md from the key tables.
func Markdown() string {
	var b strings.Builder
	b.WriteString(`# Configuration reference (agent.toml)

<!-- Generated from agent/config by Markdown(); do not edit. Regenerate with: go test ./agent/config -update -->

A StoatFlow agent reads one TOML file (` + "`stoatflow run -c agent.toml`" + `) with two tables:
` + "`[streams]`" + ` holds Kafka Streams properties under their Kafka names, with Kafka Streams 4.4
defaults, and the Kafka client properties StoatFlow maps onto its Kafka client (sarama);
` + "`[agent]`" + ` holds what Kafka Streams has no key for.

` + "```toml" + `
[agent]
scripts = ["scripts/wordcount.lua"]
log.level = "info"

[streams]
application.id = "wordcount"
bootstrap.servers = "embedded"
processing.guarantee = "exactly_once_v2"
"commit.interval.ms" = 100          # a quoted key is the same key
consumer.session.timeout.ms = "10s"
` + "```" + `

Rules:

- Keys are dotted TOML keys: ` + "`commit.interval.ms = 100`" + ` (nested tables) and
  ` + "`\"commit.interval.ms\" = 100`" + ` (one quoted key) mean the same; ` + "`[streams.producer]`" + ` then
  ` + "`linger.ms = 5`" + ` is ` + "`producer.linger.ms`" + `.
- Durations (type ` + "`duration`" + `) are integer milliseconds or strings such as ` + "`\"250ms\"`" + `,
  ` + "`\"10s\"`" + `, ` + "`\"5m\"`" + `, ` + "`\"1h\"`" + `. Numbers and booleans may also be written as strings, as in Java
  properties files. Enum values are case-insensitive. A ` + "`list`" + ` is a TOML array of strings
  or one comma-separated string.
- Relative paths (scripts, ` + "`state.dir`" + `, TLS files) resolve against the config file's directory.
- Every problem of a file is reported at once, one line each, as ` + "`file:line: key: message`" + `.
  A bad value is shown as the file writes it (` + "`num.stream.threads = 2.0`" + ` is
  ` + "`invalid value 2.0: expected an integer`" + `, ` + "`0x100`" + ` stays ` + "`0x100`" + `).
  An unknown key names the closest known key. A Kafka key StoatFlow knows but does not
  implement is an error ` + "`not supported yet`" + `; keys that only matter to a group of several
  Kafka Streams instances are accepted and ignored with one notice each. A key under a name
  Kafka deprecated works, with a warning naming the key to use (` + "`stoatflow validate`" + ` and
  the running agent say it).
- Keys of type ` + "`secret`" + ` (passwords, tokens, credentials) are never shown back: no error,
  log line, HTTP answer or dead letter holds their value or anything derived from it
  (` + "`GET /-/reload`" + ` says only that one is set). Keep them out of the file where a key allows
  it (` + "`http.token.file`" + `).
- The file is at most 1 MiB and nested at most 64 levels deep; every file it names must be a
  regular file (docs/operations.md, "Config boundaries").

`)
	b.WriteString("## [agent]\n\n")
	writeTable(&b, append(agentKeys.keys[:len(agentKeys.keys):len(agentKeys.keys)], registryAgentKeys.keys...), false)

	b.WriteString("\n## [streams]: Kafka Streams properties\n\n")
	writeTable(&b, streamsKeys.keys, false)

	b.WriteString("\n## [streams]: Schema Registry serdes\n\n")
	b.WriteString("Confluent's serde and registry client keys, for the `avro`, `protobuf` and `json-schema`\n" +
		"serdes (docs/serdes.md). `retries.wait.ms` and Kafka's `retries` cannot both be unquoted\n" +
		"dotted keys in one table (TOML): quote one, e.g. `\"retries.wait.ms\" = 500`.\n\n")
	writeTable(&b, registryKeys.keys, false)

	b.WriteString("\n## [streams]: Kafka client properties\n\n")
	b.WriteString("Written unprefixed, a client property applies to every client it concerns; with the Kafka\n" +
		"Streams prefixes `consumer.` (or `main.consumer.`), `producer.` or `admin.` it applies to that\n" +
		"client only and wins over the unprefixed key. The prefixes `restore.consumer.`,\n" +
		"`global.consumer.`, `topic.` and `client.tag.` are not supported yet.\n\n")
	writeTable(&b, clientKeys.keys, true)

	b.WriteString(`
### Producer batching: linger.ms and batch.size

Kafka Streams forces ` + "`linger.ms = 100`" + ` on its producers. StoatFlow's producer is its own,
on sarama's client: each partition has an open batch that records are appended to; one
goroutine per broker sends the ready batches of the partitions it leads in one produce request
at a time, and the records sent while a request is in flight gather into the next one, so under
load batches grow by themselves (up to ` + "`max.request.size`" + `, one batch per partition and
request) without waiting. ` + "`linger.ms`" + ` holds a partition's batch until it is that old, unless it
reaches ` + "`batch.size`" + ` bytes first; with ` + "`linger.ms = 0`" + ` a batch is ready at once and
` + "`batch.size`" + ` is unused. A transaction commit or abort and the shutdown send a lingering batch at
once; an at-least-once commit barrier waits for it, so every barrier would pay ` + "`linger.ms`" + `.
Measured with StoatFlow's own producer (bench harness, 300,000 records, two rounds each),
` + "`linger.ms = 0`" + ` instead of 5 under at_least_once cost the word count 1.4–1.6× the CPU per
record at about half the records per second, and the stateless pipeline 1.3–1.4× the CPU at
two thirds of the rate: at_least_once therefore keeps 5 ms; exactly_once_v2 uses 0. ` + "`max.in.flight.requests.per.connection`" + ` no longer pipelines produce requests: one
per broker at a time keeps a partition's order across retries, idempotent or not, and makes the
batches of the next request big; more than 5 is still refused under exactly_once_v2 or with
` + "`enable.idempotence = true`" + ` set, as Kafka Streams and Kafka's producer refuse it. A send waits while ` + "`buffer.memory`" + ` (32 MiB) of records are
unacknowledged, at most ` + "`max.block.ms`" + `: then it fails with a timeout naming the topic, and the
epoch is processed again.

### Producer timeouts and splitting: delivery.timeout.ms, retries, max.block.ms

As in Java's producer, a record fails with a retriable timeout error once
` + "`delivery.timeout.ms`" + ` has passed since its batch was created, wherever it waits: lingering,
behind a request in flight, between retries, or while its partition has no leader. A request in
flight is settled when it returns or ` + "`request.timeout.ms`" + ` ends it: until then it may still read
the records' bytes. ` + "`retries`" + ` bounds the tries of a batch as well, so with a broker gone a flush,
a commit or the shutdown ends after about ` + "`delivery.timeout.ms`" + `, and the failed epoch is
processed again (20 epochs in a row, then the application stops). Under exactly_once_v2
` + "`delivery.timeout.ms`" + ` is max int, as in Kafka Streams, and a transaction's batch gets at most 5
retries: a failed send aborts the transaction and the epoch is processed again. Records of a topic whose partition count is not
known within ` + "`max.block.ms`" + ` fail the same way. A batch the broker refuses as larger than the
topic's ` + "`max.message.bytes`" + ` is split in halves and sent again, in order and with its idempotent
sequence, and the partition's later batches are kept to the half; only a single record over the
limit fails, to the production exception handler.

### Security

` + "`security.protocol`" + ` chooses TLS and SASL. TLS reads PEM files only: ` + "`ssl.truststore.location`" + `
(CA certificates; unset = the system roots) and ` + "`ssl.keystore.location`" + ` (client certificate chain
and unencrypted private key in one file). SASL supports PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512,
with the credentials in ` + "`sasl.jaas.config`" + ` as Kafka writes them:

` + "```toml" + `
security.protocol = "SASL_SSL"
sasl.mechanism = "SCRAM-SHA-512"
sasl.jaas.config = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="secret";'
ssl.truststore.location = "ca.pem"
` + "```" + `
`)

	b.WriteString("\n## Accepted and ignored\n\nEach of these is accepted, checked for its type, and ignored with one notice line.\n\n")
	b.WriteString("| key | why |\n| --- | --- |\n")
	for _, k := range Keys() {
		if k.Disposition == Ignored {
			fmt.Fprintf(&b, "| `%s` | %s |\n", k.Name, cell(k.Reason))
		}
	}
	b.WriteString("\n## Refused\n\n| key | why |\n| --- | --- |\n")
	for _, k := range Keys() {
		if k.Disposition == Refused {
			fmt.Fprintf(&b, "| `%s` | %s |\n", k.Name, cell(k.Reason))
		}
	}
	b.WriteString("\n| refused value | why |\n| --- | --- |\n")
	for _, k := range Keys() {
		var vals []string
		for v := range k.Refuse {
			// Class names repeat the reason of their short name.
			if !strings.Contains(v, ".") && !strings.HasSuffix(v, "Handler") {
				vals = append(vals, v)
			}
		}
		sort.Strings(vals)
		for _, v := range vals {
			fmt.Fprintf(&b, "| `%s = %s` | %s |\n", k.Name, v, cell(k.Refuse[v]))
		}
	}
	b.WriteString("\n## Not supported yet\n\nSetting one of these is an error `not supported yet`.\n\n")
	var names []string
	for _, k := range Keys() {
		if k.Disposition == Unsupported {
			names = append(names, fmt.Sprintf("`%s` (%s)", k.Name, k.Reason))
		}
	}
	for _, n := range unmappedClientKeys {
		names = append(names, "`"+n+"`")
	}
	b.WriteString(strings.Join(names, ", ") + ".\n")
	return b.String()
}

func writeTable(b *strings.Builder, keys []*Key, client bool) {
	if client {
		b.WriteString("| key | clients | type | default | description |\n| --- | --- | --- | --- | --- |\n")
	} else {
		b.WriteString("| key | type | default | description |\n| --- | --- | --- | --- |\n")
	}
	for _, k := range keys {
		if k.Disposition != Normal {
			continue
		}
		if client {
			fmt.Fprintf(b, "| `%s` | %v | %s | %s | %s |\n", k.Name, k.Client, cell(typeText(k)), cell(codeCell(defaultText(k))), cell(k.Doc))
		} else {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", k.Name, cell(typeText(k)), cell(codeCell(defaultText(k))), cell(k.Doc))
		}
	}
}

// Usage is the compact key list printed by --help.
func Usage() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	section := func(title string, keys []*Key) {
		fmt.Fprintf(w, "%s\n", title)
		for _, k := range keys {
			if k.Disposition == Normal {
				fmt.Fprintf(w, "  %s\t%v\t%s\n", k.Name, k.Type, defaultText(k))
			}
		}
	}
	section("[agent]", append(agentKeys.keys[:len(agentKeys.keys):len(agentKeys.keys)], registryAgentKeys.keys...))
	section("[streams]", streamsKeys.keys)
	section("[streams] Schema Registry serdes (avro, protobuf, json-schema)", registryKeys.keys)
	section("[streams] client properties (also with a consumer., producer. or admin. prefix)", clientKeys.keys)
	w.Flush()
	b.WriteString("Full reference: docs/config.md\n")
	return b.String()
}
