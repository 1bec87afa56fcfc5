package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// kstreamsJVM are the options of Kafka Streams' JVM, as a Kafka Streams application would be
// deployed: a heap bounded at 1 GiB (the broker's, kafka-server-start.sh's), its initial size
// left to the JVM; G1, the JVM's own choice on a machine of two cores or more, named so that
// it holds on one; both JIT compilers and every other setting the JVM's defaults. The store,
// RocksDB, lives outside the heap. It logs at warn, as the agents do (log.level = "warn").
var kstreamsJVM = []string{
	"-Xmx1g",
	"-XX:+UseG1GC",
	"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
}

// kstreamsMain is the class bench/kstreams builds.
const kstreamsMain = "stoatflow.bench.Main"

// kstreamsApp is Kafka Streams' word count (bench/kstreams), built once per harness run.
type kstreamsApp struct {
	java      string
	classpath string // its classes, then the runtime jars in ~/.m2
	version   string // the JVM's, as java -version prints it
}

// buildKStreams builds bench/kstreams with Maven (the jars resolve into ~/.m2; the classes
// and the classpath go to bench/kstreams/target, which git ignores).
func buildKStreams() (*kstreamsApp, error) {
	root, err := moduleDir()
	if err != nil {
		return nil, err
	}
	src := filepath.Join(root, "bench", "kstreams")
	java, err := kafkatest.Java()
	if err != nil {
		return nil, err
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return nil, fmt.Errorf("%w: mvn not found (Debian package maven)", kafkatest.ErrMissingTool)
	}
	if out, err := exec.Command(mvn, "-q", "-B", "-f", filepath.Join(src, "pom.xml"), "package").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building bench/kstreams (mvn package): %w\n%s", err, out)
	}
	cp, err := os.ReadFile(filepath.Join(src, "target", "classpath.txt"))
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(java, "-version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s -version: %w\n%s", java, err, out)
	}
	version, _, _ := strings.Cut(string(out), "\n")
	return &kstreamsApp{
		java:      java,
		classpath: filepath.Join(src, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(cp)),
		version:   strings.TrimSpace(version),
	}, nil
}

// start starts the word count of scenario sc on brokers as a scenario process, its
// properties and state in dir.
func (k *kstreamsApp) start(sc scenario, brokers []string, dir string, verbose bool) (*child, error) {
	props, err := streamsProperties(sc, brokers, filepath.Join(dir, "state"))
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "streams.properties")
	if err := os.WriteFile(file, props, 0o644); err != nil {
		return nil, err
	}
	args := append(slices.Clone(kstreamsJVM), "-cp", k.classpath, kstreamsMain, file, inputTopic, outputTopic)
	return startProcess(exec.Command(k.java, args...), sc.name, verbose, true)
}

// streamsProperties are Kafka Streams' properties for scenario sc: its [streams] config, the
// one the agent runs with (the keys are Kafka Streams' own), with the application.id,
// bootstrap.servers and state.dir an agent of the scenario would have. Client settings the
// config does not name stay Kafka Streams' defaults, as the agent's stay its own.
func streamsProperties(sc scenario, brokers []string, stateDir string) ([]byte, error) {
	var tree map[string]any
	if _, err := toml.Decode(sc.streams, &tree); err != nil {
		return nil, fmt.Errorf("%s: the [streams] config: %w", sc.name, err)
	}
	props := map[string]string{}
	flatten("", tree, props)
	props["application.id"] = "bench-" + sc.name
	props["bootstrap.servers"] = strings.Join(brokers, ",")
	props["state.dir"] = stateDir
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, propertiesEscape(props[k]))
	}
	return b.Bytes(), nil
}

// flatten writes TOML's dotted keys (commit.interval.ms = 100 is a table commit holding a
// table interval) as the dotted names of Kafka's properties.
func flatten(prefix string, tree map[string]any, out map[string]string) {
	for k, v := range tree {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			flatten(name, sub, out)
			continue
		}
		out[name] = fmt.Sprint(v)
	}
}

// propertiesEscape escapes a value for java.util.Properties.load, which reads a backslash
// as an escape.
func propertiesEscape(v string) string { return strings.ReplaceAll(v, `\`, `\\`) }
