package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EnvDir names the environment variable holding the shared directory of clusters that
// `make test-kafka` (and `make kafka-up`) set up: tests started with it use the clusters
// there instead of starting their own.
const EnvDir = "STOATFLOW_KAFKA_DIR"

// TestPrefix starts the name of every real-broker test: `make test-kafka` runs the tests
// matching it (with the build tag kafka), and Start refuses any other.
const TestPrefix = "TestKafka"

// lockWait bounds how long Start waits for a shared cluster another test holds exclusively
// (or for an exclusive test, until the tests using it are done).
const lockWait = 10 * time.Minute

// Options says which cluster a test needs.
type Options struct {
	// Nodes is 1 or 3 (0 means 1).
	Nodes int
	// TransactionVersion is 2 (0 means 2, Kafka 4.4's default) or 1.
	TransactionVersion int
	// Exclusive: the test kills, pauses or restarts nodes. It has the shared cluster to
	// itself, waiting until the tests using it are done (and they wait for it), and the
	// cluster is healed when it ends: nodes resumed, started again, every partition back
	// in sync. Without it, those methods fail the test on a shared cluster.
	Exclusive bool
}

// Start returns the cluster the test runs against. Under `make test-kafka` (EnvDir set) it
// is the shared cluster of that shape, started by the first test that needs it and used by
// every package's tests (each with names of its own: see Name); otherwise a cluster of the
// test's own, stopped when the test ends. When the test fails, the path of the brokers'
// logs is logged, and a cluster of its own is kept on disk.
//
// Without Java or Maven the test is skipped, or failed when the environment variable CI is
// set. The test's name must start with TestPrefix.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	Require(t)
	spec, err := Spec{Nodes: o.Nodes, TransactionVersion: o.TransactionVersion}.normalized()
	if err != nil {
		t.Fatal(err)
	}
	var c *Cluster
	if dir := os.Getenv(EnvDir); dir != "" {
		c = useShared(t, dir, spec, o.Exclusive)
	} else {
		c = startOwn(t, spec)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kafkatest: broker logs of the failed test: %s/node-*/server.log", c.dir)
		}
	})
	return c
}

// Require checks what every real-broker test needs, for one whose clusters are started by
// the program it runs (with Own) rather than by Start: its name starts with TestPrefix, and
// Apache Kafka's jars resolve (Resolve). Without Java or Maven the test is skipped, or failed
// when the environment variable CI is set.
func Require(t testing.TB) {
	t.Helper()
	if !strings.HasPrefix(t.Name(), TestPrefix) {
		t.Fatalf("kafkatest: %s: a real-broker test's name starts with %s (so that make test-kafka runs it)", t.Name(), TestPrefix)
	}
	if err := Resolve(); err != nil {
		if errors.Is(err, ErrMissingTool) && os.Getenv("CI") == "" {
			t.Skipf("real-broker test skipped: %v", err)
		}
		if errors.Is(err, ErrMissingTool) {
			t.Fatalf("%v (CI is set: the real-broker tests must run; .ci/run installs openjdk-17-jdk-headless and maven)", err)
		}
		t.Fatal(err)
	}
}

// startOwn starts a cluster for this test alone, its nodes tied to the test process.
func startOwn(t testing.TB, spec Spec) *Cluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "stoatflow-kafka-")
	if err != nil {
		t.Fatal(err)
	}
	c, err := launch(filepath.Join(dir, spec.Name()), spec, true)
	if err != nil {
		t.Fatalf("%v\n(kept %s)", err, dir)
	}
	c.control = true
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
		if t.Failed() {
			t.Logf("kafkatest: kept the failed test's cluster directory %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return c
}

// holding lists the shared clusters each running test of this process holds. A test (or a
// subtest of it) starting the same cluster again gets the one it holds: taking the use lock
// a second time would deadlock with an exclusive taker that arrived in between, which waits
// for the first hold while the second waits behind it.
var holding = struct {
	sync.Mutex
	m map[heldCluster]*Cluster
}{m: map[heldCluster]*Cluster{}}

type heldCluster struct{ test, dir, cluster string }

// heldBy is the cluster the test or one of its parents holds, if any.
func heldBy(test, dir, cluster string) *Cluster {
	holding.Lock()
	defer holding.Unlock()
	for name := test; ; {
		if c, ok := holding.m[heldCluster{name, dir, cluster}]; ok {
			return c
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return nil
		}
		name = name[:i]
	}
}

// useShared takes the shared cluster of spec in dir (starting it if needed) for the test:
// shared with other tests, or exclusive until the test ends and the cluster is healed.
func useShared(t testing.TB, dir string, spec Spec, exclusive bool) *Cluster {
	t.Helper()
	if c := heldBy(t.Name(), dir, spec.Name()); c != nil {
		if exclusive && !c.control {
			t.Fatalf("kafkatest: %s already uses the shared cluster %s with other tests; it cannot have it exclusively too", t.Name(), spec.Name())
		}
		return c
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockUse(dir, spec.Name(), exclusive, lockWait)
	if err != nil {
		t.Fatalf("%v\n(another test held the shared cluster %s for %v; an exclusive test must not run inside one that holds the same cluster)", err, spec.Name(), lockWait)
	}
	c, err := up(dir, spec)
	if err != nil {
		unlock()
		t.Fatal(err)
	}
	c.control = exclusive
	key := heldCluster{t.Name(), dir, spec.Name()}
	holding.Lock()
	holding.m[key] = c
	holding.Unlock()
	t.Cleanup(func() {
		defer unlock()
		holding.Lock()
		delete(holding.m, key)
		holding.Unlock()
		defer c.closeClients()
		if exclusive {
			if err := c.heal(); err != nil {
				t.Errorf("kafkatest: the shared cluster is left unhealthy: %v", err)
			}
		}
	})
	return c
}

// controlled fails the test unless it may kill, pause and restart this cluster's nodes.
func (c *Cluster) controlled(t testing.TB, op string) {
	t.Helper()
	if !c.control {
		t.Fatalf("kafkatest: %s on the shared cluster %s needs Options{Exclusive: true}", op, c.info.Spec.Name())
	}
}

// Kill kills the nodes (SIGKILL) and waits until their processes are gone.
func (c *Cluster) Kill(t testing.TB, ids ...int) {
	t.Helper()
	c.controlled(t, "Kill")
	for _, id := range ids {
		if err := c.killNode(id); err != nil {
			t.Fatal(err)
		}
	}
}

// Pause freezes the nodes (SIGSTOP): connections stay open and nothing answers.
func (c *Cluster) Pause(t testing.TB, ids ...int) {
	t.Helper()
	c.controlled(t, "Pause")
	for _, id := range ids {
		if err := c.signal(id, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		if err := c.waitState(id, stopped, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// Resume lets paused nodes run again (SIGCONT).
func (c *Cluster) Resume(t testing.TB, ids ...int) {
	t.Helper()
	c.controlled(t, "Resume")
	for _, id := range ids {
		if err := c.signal(id, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if err := c.waitState(id, running, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// Shutdown stops the nodes as an operator would (SIGTERM: a controlled shutdown that moves
// their leaderships away first) and waits until their processes are gone.
func (c *Cluster) Shutdown(t testing.TB, ids ...int) {
	t.Helper()
	c.controlled(t, "Shutdown")
	for _, id := range ids {
		if err := c.shutdownNode(id); err != nil {
			t.Fatal(err)
		}
	}
}

// Restart shuts down those of the nodes that run (see Shutdown; a paused one is resumed
// first), starts them all again and waits until they serve: registered, their features
// loaded, listed as live by every running node. Killed nodes are simply started: Kill then
// Restart is a crash and recovery. Partitions may still be catching up: see WaitHealthy.
func (c *Cluster) Restart(t testing.TB, ids ...int) {
	t.Helper()
	c.controlled(t, "Restart")
	if err := c.restartNodes(ids); err != nil {
		t.Fatal(err)
	}
}

// WaitHealthy waits until every node runs and serves and every partition of every topic has
// a leader and all its replicas in sync.
func (c *Cluster) WaitHealthy(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	if err := poll(ctx, "waiting until "+c.dir+" is healthy", func() error { return c.healthy(ctx) }); err != nil {
		t.Fatal(err)
	}
}

// probe runs f until it succeeds, for up to a minute (a leader or a coordinator may be
// moving), failing the test after that.
func probe[T any](t testing.TB, what string, f func(ctx context.Context) (T, error)) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var v T
	err := poll(ctx, what, func() error {
		var err error
		v, err = f(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Leader is the node leading topic's partition.
func (c *Cluster) Leader(t testing.TB, topic string, partition int32) int {
	t.Helper()
	return probe(t, fmt.Sprintf("leader of %s-%d", topic, partition), func(ctx context.Context) (int, error) {
		return c.leader(ctx, topic, partition)
	})
}

// Controller is the active KRaft controller: the node leading the metadata log.
func (c *Cluster) Controller(t testing.TB) int {
	t.Helper()
	return probe(t, "active controller", c.controller)
}

// TxnCoordinator is the node coordinating the transactional ID's transactions.
func (c *Cluster) TxnCoordinator(t testing.TB, transactionalID string) int {
	t.Helper()
	return probe(t, "coordinator of transactional ID "+transactionalID, func(ctx context.Context) (int, error) {
		return c.coordinator(ctx, txnKey, transactionalID)
	})
}

// GroupCoordinator is the node coordinating the group (a consumer group, or a streams
// group: an application.id).
func (c *Cluster) GroupCoordinator(t testing.TB, group string) int {
	t.Helper()
	return probe(t, "coordinator of group "+group, func(ctx context.Context) (int, error) {
		return c.coordinator(ctx, groupKey, group)
	})
}

// DescribeStreamsGroup asks the group's coordinator for StreamsGroupDescribe; a group the
// broker does not know yet is an empty one.
func (c *Cluster) DescribeStreamsGroup(t testing.TB, group string) kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	resp := c.Request(t, c.GroupCoordinator(t, group), req).(*kmsg.StreamsGroupDescribeResponse)
	if len(resp.Groups) != 1 {
		t.Fatalf("StreamsGroupDescribe %s: %d groups", group, len(resp.Groups))
	}
	g := resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("StreamsGroupDescribe %s: %v", group, err)
	}
	return g
}

// Features are the finalized feature levels (transaction.version, streams.version,
// metadata.version, ...) as a running node reports them.
func (c *Cluster) Features(t testing.TB) map[string]int16 {
	t.Helper()
	return probe(t, "finalized features", func(ctx context.Context) (map[string]int16, error) {
		resp, err := c.askAny(ctx, apiVersions(), func(r kmsg.Response) error {
			return kerr.ErrorForCode(r.(*kmsg.ApiVersionsResponse).ErrorCode)
		})
		if err != nil {
			return nil, err
		}
		return finalizedFeatures(resp.(*kmsg.ApiVersionsResponse)), nil
	})
}

// CreateTopic creates topic with the cluster's replication factor (all its nodes) and the
// given topic configs (nil for the broker's defaults), and waits until every running node
// knows a leader for each partition.
func (c *Cluster) CreateTopic(t testing.TB, topic string, partitions int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions = partitions
	rt.ReplicationFactor = int16(len(c.info.Nodes))
	for k, v := range configs {
		rc := kmsg.NewCreateTopicsRequestTopicConfig()
		rc.Name, rc.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, rc)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// Sent to one node, answered by the controller: a retry after a timeout may find the
	// topic made by the first try.
	_, err := c.askAny(ctx, req, func(r kmsg.Response) error {
		for _, rt := range r.(*kmsg.CreateTopicsResponse).Topics {
			if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				return fmt.Errorf("creating topic %s: %w", topic, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range partitions {
		for _, id := range c.NodeIDs() {
			if _, st := c.state(id); st != running {
				continue
			}
			err := poll(ctx, fmt.Sprintf("node %d learning of %s-%d", id, topic, p), func() error {
				resp, err := c.ask(ctx, id, metadata(topic))
				if err != nil {
					return err
				}
				for _, mt := range resp.(*kmsg.MetadataResponse).Topics {
					if int32(len(mt.Partitions)) == partitions && mt.Partitions[p].Leader >= 0 {
						return nil
					}
				}
				return errors.New("no leader yet")
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Request sends req to node id as is (franz-go picks the highest version both sides know)
// and returns the response, failing the test if the node does not answer within 5 s. For
// requests franz-go's client does not route, as the streams group ones (send them to
// GroupCoordinator), and for asking one node in particular.
func (c *Cluster) Request(t testing.TB, id int, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := c.ask(t.Context(), id, req)
	if err != nil {
		t.Fatalf("kafkatest: %s to node %d: %v", kmsg.NameForKey(req.Key()), id, err)
	}
	return resp
}

// Client is a franz-go client of the cluster with opts, closed when the test ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Bootstrap()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Name is a name no other test uses, on this cluster or any other, for a topic, a group,
// an application.id or a transactional ID: prefix, the test's name, a random suffix.
func Name(t testing.TB, prefix string) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, t.Name())
	if len(name) > 100 {
		name = name[:100]
	}
	return prefix + "-" + name + "-" + hex.EncodeToString(b[:])
}
