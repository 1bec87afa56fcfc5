package kafkatest

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed pom.xml
var pom []byte

//go:embed log4j2.properties
var log4jConfig []byte

// ErrMissingTool is wrapped by the error of anything that needs Java or Maven on a machine
// without them. Tests skip on it, except under CI, where it fails them (see Start).
var ErrMissingTool = errors.New("missing tool")

// runtime is what starting a JVM of Kafka needs.
type runtime struct {
	java      string
	classpath string
	// archive is the class-data sharing archive of a broker's classes ("" while there is
	// none): the JVMs map the classes in instead of loading and verifying them again.
	archive string
}

// CacheDir is where the resolved classpath is kept, keyed by the pom's hash (the jars
// themselves stay in Maven's local repository): $STOATFLOW_CACHE, else the user's cache
// directory's stoatflow/kafka.
func CacheDir() (string, error) {
	if d := os.Getenv("STOATFLOW_CACHE"); d != "" {
		return filepath.Join(d, "kafka"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("kafkatest: no cache directory (set STOATFLOW_CACHE): %w", err)
	}
	return filepath.Join(d, "stoatflow", "kafka"), nil
}

// Java finds the java that runs Kafka's JVMs: $JAVA_HOME/bin/java, else the PATH's. Other
// JVMs beside the brokers (a Kafka Streams application) run on the same one.
func Java() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%w: java: JAVA_HOME=%s has no bin/java", ErrMissingTool, home)
		}
		return p, nil
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("%w: java not found (Debian package openjdk-17-jdk-headless, or set JAVA_HOME)", ErrMissingTool)
	}
	return p, nil
}

// Resolve finds Java and the classpath of Apache Kafka 4.4.0, resolving the jars with Maven
// the first time (or after pom.xml changed), and makes the class-data sharing archive of the
// broker if this Java and classpath have none yet (by starting and stopping a broker once,
// some seconds). Several processes may call it at once.
func Resolve() error {
	rt, err := loadRuntime()
	if err != nil || rt.archive != "" {
		return err
	}
	file, err := archiveFile(rt)
	if err != nil {
		return err
	}
	unlock, err := lockFile(file+".lock", true)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Stat(file); err == nil {
		return nil // another process made it while this one waited
	}
	if b, err := os.ReadFile(file + ".failed"); err == nil {
		fmt.Fprintf(os.Stderr, "kafkatest: no class-data sharing archive, the JVMs start slower (%s):\n%s\n", file+".failed", b)
		return nil
	}
	if err := makeArchive(rt, file); err != nil {
		// The archive only speeds the start up: without it, the JVMs load the classes from
		// the jars. The failure is kept so that every test does not try again.
		_ = os.WriteFile(file+".failed", []byte(err.Error()+"\n"), 0o644)
		fmt.Fprintf(os.Stderr, "kafkatest: no class-data sharing archive, the JVMs start slower: %v\n", err)
	}
	return nil
}

// loadRuntime finds Java, the classpath (resolved if needed) and the archive if made.
func loadRuntime() (*runtime, error) {
	java, err := Java()
	if err != nil {
		return nil, err
	}
	cp, err := classpath()
	if err != nil {
		return nil, err
	}
	rt := &runtime{java: java, classpath: cp}
	file, err := archiveFile(rt)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(file); err == nil {
		rt.archive = file
	}
	return rt, nil
}

// archiveFile is where the archive of rt's Java, classpath and JVM options is kept. An
// archive only serves the JVM build that wrote it: its key has the JVM library's size and
// time, so that an upgraded JDK makes a new one.
func archiveFile(rt *runtime) (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	java, err := filepath.EvalSymlinks(rt.java)
	if err != nil {
		return "", fmt.Errorf("kafkatest: %w", err)
	}
	h := sha256.New()
	fmt.Fprintln(h, java, rt.classpath, strings.Join(jvmOptions, " "))
	for _, f := range []string{java, filepath.Join(filepath.Dir(java), "..", "lib", "server", "libjvm.so")} {
		if st, err := os.Stat(f); err == nil {
			fmt.Fprintln(h, f, st.Size(), st.ModTime().UnixNano())
		}
	}
	return filepath.Join(dir, "broker-"+hex.EncodeToString(h.Sum(nil)[:8])+".jsa"), nil
}

// makeArchive has the JVM write file at its exit (-XX:ArchiveClassesAtExit) with the classes
// a broker loaded: one starts in a 1-node cluster of its own, serves (the coordinators
// too), and stops.
func makeArchive(rt *runtime, file string) error {
	dir, err := os.MkdirTemp("", "stoatflow-kafka-archive-")
	if err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "broker.jsa")
	c := &Cluster{
		dir: filepath.Join(dir, "cluster"), rt: rt, tied: true,
		info:      clusterInfo{Spec: Spec{Nodes: 1, TransactionVersion: 2}},
		brokerJVM: []string{"-XX:ArchiveClassesAtExit=" + tmp},
	}
	err = c.create()
	if err == nil {
		err = c.shutdownNode(1) // the archive is written as the JVM exits
	}
	if err != nil {
		_ = c.Stop()
		return err
	}
	c.closeClients()
	if st, err := os.Stat(tmp); err != nil || st.Size() == 0 {
		return fmt.Errorf("kafkatest: the broker wrote no archive (log: %s)\n%s", c.LogFile(1), c.logTail(1))
	}
	return os.Rename(tmp, file)
}

// classpath returns the cached classpath of pom.xml's dependencies, or resolves it with
// Maven. A cached classpath naming a jar no longer there (a cleaned ~/.m2) is resolved again.
func classpath() (string, error) {
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(pom)
	key := hex.EncodeToString(sum[:8])
	file := filepath.Join(dir, "classpath-"+key+".txt")
	if cp, ok := readClasspath(file); ok {
		return cp, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("kafkatest: %w", err)
	}
	unlock, err := lockFile(filepath.Join(dir, "resolve.lock"), true)
	if err != nil {
		return "", err
	}
	defer unlock()
	if cp, ok := readClasspath(file); ok {
		return cp, nil // another process resolved it while this one waited
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", fmt.Errorf("%w: mvn not found (Debian package maven)", ErrMissingTool)
	}
	pomFile := filepath.Join(dir, "pom-"+key+".xml")
	if err := os.WriteFile(pomFile, pom, 0o644); err != nil {
		return "", fmt.Errorf("kafkatest: %w", err)
	}
	tmp := file + ".tmp"
	out, err := exec.Command(mvn, "-B", "-q", "-f", pomFile, "dependency:build-classpath",
		"-Dmdep.outputFile="+tmp).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kafkatest: resolving Apache Kafka's jars with Maven (%s): %v\n%s", pomFile, err, out)
	}
	if err := os.Rename(tmp, file); err != nil {
		return "", fmt.Errorf("kafkatest: %w", err)
	}
	cp, ok := readClasspath(file)
	if !ok {
		return "", fmt.Errorf("kafkatest: Maven wrote a classpath naming missing jars: %s", file)
	}
	return cp, nil
}

func readClasspath(file string) (string, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", false
	}
	cp := string(bytes.TrimSpace(b))
	if cp == "" {
		return "", false
	}
	for _, jar := range strings.Split(cp, string(os.PathListSeparator)) {
		if _, err := os.Stat(jar); err != nil {
			return "", false
		}
	}
	return cp, true
}
