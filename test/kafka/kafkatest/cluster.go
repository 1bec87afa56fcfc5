package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Spec is the shape of a cluster.
type Spec struct {
	// Nodes is 1 or 3 (0 means 1): combined broker and controller nodes, IDs 1..Nodes.
	Nodes int `json:"nodes"`
	// TransactionVersion is the transaction.version feature the storage is formatted with:
	// 2, Kafka 4.4's default (KIP-890), or 1 (0 means 2).
	TransactionVersion int `json:"transactionVersion"`
	// Server runs each node's JVM as kafka-server-start.sh runs a broker (serverJVMOptions:
	// a 1 GiB heap, G1, both JIT compilers) instead of the small JVM that starts tests
	// quickly: for benchmarks, where the broker's speed counts.
	Server bool `json:"server,omitempty"`
}

func (s Spec) normalized() (Spec, error) {
	if s.Nodes == 0 {
		s.Nodes = 1
	}
	if s.TransactionVersion == 0 {
		s.TransactionVersion = 2
	}
	if s.Nodes != 1 && s.Nodes != 3 {
		return s, fmt.Errorf("kafkatest: Nodes = %d: a cluster has 1 or 3 nodes", s.Nodes)
	}
	if s.TransactionVersion != 1 && s.TransactionVersion != 2 {
		return s, fmt.Errorf("kafkatest: TransactionVersion = %d: Kafka 4.4 has 1 and 2", s.TransactionVersion)
	}
	return s, nil
}

// Name names the cluster's directory inside a shared directory: n1-tv2, n3-tv1,
// n1-tv2-server, ...
func (s Spec) Name() string {
	s, _ = s.normalized()
	name := fmt.Sprintf("n%d-tv%d", s.Nodes, s.TransactionVersion)
	if s.Server {
		name += "-server"
	}
	return name
}

type nodeInfo struct {
	ID             int `json:"id"`
	BrokerPort     int `json:"brokerPort"`
	ControllerPort int `json:"controllerPort"`
}

// clusterInfo is cluster.json, what another process needs to use and control the cluster.
type clusterInfo struct {
	Spec      Spec       `json:"spec"`
	ClusterID string     `json:"clusterId"`
	Nodes     []nodeInfo `json:"nodes"`
}

// Cluster is a running Apache Kafka cluster on loopback, in a directory of its own:
// cluster.json, then per node node-N/ with server.properties, data/, server.log (the
// broker's log, kept across restarts) and pid.
type Cluster struct {
	dir  string
	info clusterInfo
	rt   *runtime
	// tied: the nodes this process starts die with it (a test's own cluster); the nodes of
	// a shared cluster outlive the process that started them.
	tied bool
	// brokerJVM are more options of the brokers' JVMs (not of the storage tool's).
	brokerJVM []string
	// control: the test may kill, pause and restart nodes (its own cluster, or a shared one
	// it has exclusively).
	control bool

	mu      sync.Mutex
	clients map[int]*kgo.Client // one per node, seeded with that node alone
}

const (
	// startTimeout bounds a cluster's or a node's start (it takes seconds on an idle machine).
	startTimeout = 2 * time.Minute
	// launchTries is how often a new cluster is tried with new ports when one was taken
	// between being picked and being bound.
	launchTries = 3
)

// Up returns the cluster of spec in the shared directory dir (dir/<spec.Name()>), starting
// it if it is not there yet, and starting again any of its nodes that died. Processes
// calling Up on one directory at once get the same cluster. It waits while a test has the
// cluster exclusively (Options.Exclusive).
func Up(dir string, spec Spec) (*Cluster, error) {
	spec, err := spec.normalized()
	if err != nil {
		return nil, err
	}
	if err := Resolve(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("kafkatest: %w", err)
	}
	unlock, err := lockUse(dir, spec.Name(), false, 0)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return up(dir, spec)
}

// up is Up for a caller holding the cluster's use lock (lockUse): no test is killing its
// nodes, so a dead node is one to start again.
func up(dir string, spec Spec) (*Cluster, error) {
	unlock, err := lockFile(filepath.Join(dir, spec.Name()+".lock"), true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	cdir := filepath.Join(dir, spec.Name())
	if _, err := os.Stat(filepath.Join(cdir, "cluster.json")); err == nil {
		c, err := open(cdir)
		if err != nil {
			return nil, err
		}
		if err := c.heal(); err != nil {
			c.closeClients()
			return nil, err
		}
		return c, nil
	}
	return launch(cdir, spec, false)
}

// Own starts a new cluster of spec in dir/<spec.Name()> for this process alone, as a test's
// own cluster is: its nodes are killed when this process dies, if Stop was not called first.
// For programs that are not tests (the benchmark harness); tests call Start.
func Own(dir string, spec Spec) (*Cluster, error) {
	spec, err := spec.normalized()
	if err != nil {
		return nil, err
	}
	if err := Resolve(); err != nil {
		return nil, err
	}
	return launch(filepath.Join(dir, spec.Name()), spec, true)
}

// open reads the cluster in directory cdir, whichever process started it.
func open(cdir string) (*Cluster, error) {
	b, err := os.ReadFile(filepath.Join(cdir, "cluster.json"))
	if err != nil {
		return nil, fmt.Errorf("kafkatest: %w", err)
	}
	c := &Cluster{dir: cdir}
	if err := json.Unmarshal(b, &c.info); err != nil {
		return nil, fmt.Errorf("kafkatest: %s: %w", filepath.Join(cdir, "cluster.json"), err)
	}
	if c.rt, err = loadRuntime(); err != nil {
		return nil, err
	}
	return c, nil
}

// launch formats and starts a new cluster in cdir (removed first), trying new ports when
// one was taken by another process in the meantime.
func launch(cdir string, spec Spec, tied bool) (*Cluster, error) {
	rt, err := loadRuntime()
	if err != nil {
		return nil, err
	}
	for try := 1; ; try++ {
		c := &Cluster{dir: cdir, rt: rt, tied: tied, info: clusterInfo{Spec: spec}}
		err := c.create()
		if err == nil {
			return c, nil
		}
		_ = c.Stop()
		if !errors.Is(err, errPortTaken) || try == launchTries {
			return nil, err
		}
	}
}

// create lays out, formats and starts the cluster, and waits until it serves.
func (c *Cluster) create() error {
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	id, err := newClusterID()
	if err != nil {
		return err
	}
	c.info.ClusterID = id
	listeners, err := reservePorts(2 * c.info.Spec.Nodes)
	if err != nil {
		return err
	}
	defer closeAll(listeners) // if formatting fails
	for i := range c.info.Spec.Nodes {
		c.info.Nodes = append(c.info.Nodes, nodeInfo{
			ID:             i + 1,
			BrokerPort:     port(listeners[2*i]),
			ControllerPort: port(listeners[2*i+1]),
		})
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, "log4j2.properties"), log4jConfig, 0o644); err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	errs := make([]error, len(c.info.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.info.Nodes {
		if err := os.MkdirAll(c.nodeDir(n.ID), 0o755); err != nil {
			return fmt.Errorf("kafkatest: %w", err)
		}
		if err := os.WriteFile(c.propertiesFile(n.ID), []byte(c.serverProperties(n)), 0o644); err != nil {
			return fmt.Errorf("kafkatest: %w", err)
		}
		wg.Go(func() { errs[i] = c.format(n.ID) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The ports are free from here until the JVMs bind them: a race with other processes
	// picking ports that launch survives by trying again.
	closeAll(listeners)
	ids := c.NodeIDs()
	for _, id := range ids {
		if err := c.startNode(id); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.waitServing(ctx, ids); err != nil {
		return err
	}
	// The internal topics are created at the first FindCoordinator: have that done here
	// rather than in the first test, and the coordinators known to the fault tests.
	if err := c.warmCoordinators(ctx); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c.info, "", "  ")
	if err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, "cluster.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	return nil
}

// Stop kills every node (the data is thrown away with the directory, so there is no
// controlled shutdown to wait for). The directory stays: its logs may be wanted.
func (c *Cluster) Stop() error {
	c.closeClients()
	var errs []error
	for _, n := range c.info.Nodes {
		errs = append(errs, c.killNode(n.ID))
	}
	return errors.Join(errs...)
}

// Down stops every cluster in the shared directory dir. The directory stays.
func Down(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*", "cluster.json"))
	if err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	var errs []error
	for _, f := range files {
		c, err := open(filepath.Dir(f))
		if err == nil {
			err = c.Stop()
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Dir is the cluster's directory; node N's log is node-N/server.log in it.
func (c *Cluster) Dir() string { return c.dir }

// Spec is the cluster's shape.
func (c *Cluster) Spec() Spec { return c.info.Spec }

// NodeIDs lists the node IDs, 1..Nodes.
func (c *Cluster) NodeIDs() []int {
	ids := make([]int, len(c.info.Nodes))
	for i, n := range c.info.Nodes {
		ids[i] = n.ID
	}
	return ids
}

// Addr is node id's broker address (host:port).
func (c *Cluster) Addr(id int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.node(id).BrokerPort))
}

// Bootstrap lists every node's broker address.
func (c *Cluster) Bootstrap() []string {
	addrs := make([]string, len(c.info.Nodes))
	for i, n := range c.info.Nodes {
		addrs[i] = c.Addr(n.ID)
	}
	return addrs
}

// BootstrapServers is Bootstrap as a bootstrap.servers value.
func (c *Cluster) BootstrapServers() string { return strings.Join(c.Bootstrap(), ",") }

// LogFile is node id's broker log.
func (c *Cluster) LogFile(id int) string { return filepath.Join(c.nodeDir(id), "server.log") }

func (c *Cluster) node(id int) nodeInfo {
	for _, n := range c.info.Nodes {
		if n.ID == id {
			return n
		}
	}
	panic(fmt.Sprintf("kafkatest: no node %d in a cluster of %d", id, len(c.info.Nodes)))
}

func (c *Cluster) nodeDir(id int) string { return filepath.Join(c.dir, fmt.Sprintf("node-%d", id)) }

func (c *Cluster) propertiesFile(id int) string {
	return filepath.Join(c.nodeDir(id), "server.properties")
}

// newClusterID is a random cluster ID in Kafka's form: a UUID in unpadded URL base64. As
// Kafka's Uuid.randomUuid, it never starts with '-': kafka-storage format would take such an
// ID for an option (one start in 64 failed so).
func newClusterID() (string, error) {
	var b [16]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("kafkatest: %w", err)
		}
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id, nil
		}
	}
}

// reservePorts binds n free loopback ports, held until closeAll.
func reservePorts(n int) ([]net.Listener, error) {
	ls := make([]net.Listener, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			closeAll(ls)
			return nil, fmt.Errorf("kafkatest: picking a free port: %w", err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func port(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

func closeAll(ls []net.Listener) {
	for _, l := range ls {
		l.Close()
	}
}
