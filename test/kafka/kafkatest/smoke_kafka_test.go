//go:build kafka

// The harness's own proof, on Apache Kafka 4.4: each cluster shape serves the project's
// producer, transactions and read_committed reads, reports its transaction.version, has
// streams groups on, and comes back from a node killed, paused and restarted.

package kafkatest_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// producerConfig is an idempotent producer's config, transactional when txnID is set.
func producerConfig(txnID string) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "kafkatest"
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Transaction.ID = txnID
	cfg.Producer.Transaction.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

func newProducer(t *testing.T, c *kafkatest.Cluster, txnID string) *kafkaio.Producer {
	t.Helper()
	p, err := kafkaio.NewProducer(c.Bootstrap(), producerConfig(txnID))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func send(t *testing.T, p *kafkaio.Producer, topic string, values ...string) {
	t.Helper()
	for _, v := range values {
		if err := p.Send(topic, 0, []byte("k"), []byte(v), nil, -1, nil); err != nil {
			t.Fatalf("Send(%s): %v", v, err)
		}
	}
}

// readUntil reads partition 0 of topic from the start at the isolation level until it has
// seen the value last, and returns the values read.
func readUntil(t *testing.T, c *kafkatest.Cluster, topic string, isolation kgo.IsolationLevel, last string) []string {
	t.Helper()
	cl := c.Client(t,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(isolation))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var values []string
	for !slices.Contains(values, last) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: %v; read %q, not yet %q", topic, err, values, last)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	return values
}

// TestKafkaClusters: on each shape of cluster, the project's producer writes records, and a
// committed transaction is visible to read_committed and an aborted one is not.
func TestKafkaClusters(t *testing.T) {
	for _, o := range []kafkatest.Options{{Nodes: 1}, {Nodes: 3}, {Nodes: 1, TransactionVersion: 1}} {
		spec := kafkatest.Spec{Nodes: o.Nodes, TransactionVersion: o.TransactionVersion}
		t.Run(spec.Name(), func(t *testing.T) {
			t.Parallel()
			c := kafkatest.Start(t, o)
			wantTV := int16(2)
			if o.TransactionVersion == 1 {
				wantTV = 1
			}
			// What an admin client's describeFeatures reads (ApiVersions' finalized features).
			if got := c.Features(t)["transaction.version"]; got != wantTV {
				t.Errorf("transaction.version = %d, want %d (features %v)", got, wantTV, c.Features(t))
			}
			if got := len(c.Bootstrap()); got != o.Nodes {
				t.Errorf("Bootstrap() has %d addresses, want %d", got, o.Nodes)
			}

			plain := kafkatest.Name(t, "plain")
			c.CreateTopic(t, plain, 1, nil)
			p := newProducer(t, c, "")
			send(t, p, plain, "a", "b", "c")
			if err := p.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := readUntil(t, c, plain, kgo.ReadUncommitted(), "c"); !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Errorf("read %q, want a, b, c", got)
			}

			txn := kafkatest.Name(t, "txn")
			c.CreateTopic(t, txn, 1, nil)
			tp := newProducer(t, c, kafkatest.Name(t, "txn-id"))
			for _, step := range []struct {
				values []string
				commit bool
			}{
				{[]string{"committed-1", "committed-2"}, true},
				{[]string{"aborted-1", "aborted-2"}, false},
				{[]string{"committed-3"}, true},
			} {
				if err := tp.BeginTxn(); err != nil {
					t.Fatal(err)
				}
				send(t, tp, txn, step.values...)
				if step.commit {
					if err := tp.CommitTxn(t.Context(), nil, ""); err != nil {
						t.Fatal(err)
					}
				} else {
					if err := tp.Flush(t.Context()); err != nil {
						t.Fatal(err)
					}
					if err := tp.AbortTxn(); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := []string{"committed-1", "committed-2", "committed-3"}
			if got := readUntil(t, c, txn, kgo.ReadCommitted(), "committed-3"); !slices.Equal(got, want) {
				t.Errorf("read_committed read %q, want %q", got, want)
			}
			all := []string{"committed-1", "committed-2", "aborted-1", "aborted-2", "committed-3"}
			if got := readUntil(t, c, txn, kgo.ReadUncommitted(), "committed-3"); !slices.Equal(got, all) {
				t.Errorf("read_uncommitted read %q, want %q", got, all)
			}
		})
	}
}

// roundTrip writes value to partition 0 of topic (acks=all) and reads it back at its
// offset: the cluster serves.
func roundTrip(t *testing.T, c *kafkatest.Cluster, topic, value string) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// Short timeouts: a request to a paused node is given up soon and sent again to the
	// partition's next leader (franz-go waits 10 s beyond the produce timeout by default).
	timeouts := []kgo.Opt{kgo.RequestTimeoutOverhead(time.Second), kgo.ProduceRequestTimeout(2 * time.Second), kgo.DialTimeout(time.Second)}
	pr := c.Client(t, append(timeouts, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	r, err := pr.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).First()
	if err != nil {
		t.Fatalf("producing %q: %v", value, err)
	}
	cl := c.Client(t, append(timeouts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(r.Offset)}}))...)
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %q back at offset %d: %v", value, r.Offset, err)
		}
		var got []string
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if len(got) > 0 {
			if got[0] != value {
				t.Fatalf("read %q at offset %d, want %q", got[0], r.Offset, value)
			}
			t.Logf("%q written and read in %v", value, time.Since(start).Round(time.Millisecond))
			return
		}
	}
}

// TestKafkaEcho is docs/testing.md's example (TestDocExample keeps the two the same).
func TestKafkaEcho(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 3}) // TransactionVersion: 1 for the protocol before KIP-890
	topic := kafkatest.Name(t, "echo")                   // so are groups, application.ids, transactional IDs
	c.CreateTopic(t, topic, 3, nil)

	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for n := 0; n == 0; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("nothing read back: %v", err)
		}
		n = fs.NumRecords()
	}
	// an agent under test is given bootstrap.servers = c.BootstrapServers()
}

// TestKafkaNodeFaults: the 3-node cluster serves again after its partition's leader is
// killed, after the leader is paused, and after the active controller restarts; the
// helper finds the leader, the controller and the coordinators throughout.
func TestKafkaNodeFaults(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 3, Exclusive: true})
	topic := kafkatest.Name(t, "faults")
	c.CreateTopic(t, topic, 1, nil)
	roundTrip(t, c, topic, "before")
	for _, id := range []int{c.GroupCoordinator(t, kafkatest.Name(t, "group")), c.TxnCoordinator(t, kafkatest.Name(t, "txn")), c.Controller(t)} {
		if id < 1 || id > 3 {
			t.Fatalf("a coordinator or the controller is node %d, not one of 1..3", id)
		}
	}

	killed := c.Leader(t, topic, 0)
	c.Kill(t, killed)
	roundTrip(t, c, topic, "leader killed")
	if l := c.Leader(t, topic, 0); l == killed {
		t.Errorf("the killed node %d still leads %s-0", killed, topic)
	}
	c.Restart(t, killed)
	c.WaitHealthy(t)

	paused := c.Leader(t, topic, 0)
	c.Pause(t, paused)
	roundTrip(t, c, topic, "leader paused")
	c.Resume(t, paused)
	c.WaitHealthy(t)

	restarted := c.Controller(t)
	c.Restart(t, restarted)
	roundTrip(t, c, topic, "controller restarted")
	c.WaitHealthy(t)
}

// TestKafkaExclusiveHeals: a test that leaves the shared cluster with a node killed and
// another paused hands it on whole: the next test finds every node answering.
func TestKafkaExclusiveHeals(t *testing.T) {
	if os.Getenv(kafkatest.EnvDir) == "" {
		t.Skip("the healing of the shared cluster: run it under make test-kafka")
	}
	var killed, paused int
	t.Run("leaves it broken", func(t *testing.T) {
		c := kafkatest.Start(t, kafkatest.Options{Nodes: 3, Exclusive: true})
		killed = c.Controller(t)
		paused = killed%3 + 1
		c.Kill(t, killed)
		c.Pause(t, paused)
	})
	if t.Failed() {
		return
	}
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 3})
	for _, id := range []int{killed, paused} {
		req := kmsg.NewPtrMetadataRequest()
		if n := len(c.Request(t, id, req).(*kmsg.MetadataResponse).Brokers); n != 3 {
			t.Errorf("node %d lists %d live brokers, want 3", id, n)
		}
	}
}

// newUUID is a random UUID in Kafka's text form, as member and process IDs are.
func newUUID(t *testing.T) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// TestKafkaStreamsGroup: the broker runs streams groups (KIP-1071): a member joining with a
// one-subtopology topology is given both tasks, and StreamsGroupDescribe shows it.
func TestKafkaStreamsGroup(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	topic := kafkatest.Name(t, "source")
	c.CreateTopic(t, topic, 2, nil)
	app := kafkatest.Name(t, "app")
	// franz-go's client does not route the streams group requests to the group's
	// coordinator (it fails them as unknown): they are sent to the coordinator's node.
	coordinator := c.GroupCoordinator(t, app)

	member := newUUID(t)
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group = app
	req.MemberID = member
	req.RebalanceTimeoutMillis = 30000
	req.ProcessID = kmsg.StringPtr(newUUID(t))
	sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	sub.SubtopologyID = "0"
	sub.SourceTopics = []string{topic}
	topo := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	topo.Subtopologies = append(topo.Subtopologies, sub)
	req.Topology = &topo
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}

	var tasks []kmsg.TaskIDs
	deadline := time.Now().Add(time.Minute)
	for len(tasks) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no task assigned within a minute")
		}
		resp := c.Request(t, coordinator, req).(*kmsg.StreamsGroupHeartbeatResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("StreamsGroupHeartbeat: %v (%v)", err, resp.ErrorMessage)
		}
		req.MemberEpoch = resp.MemberEpoch
		req.Topology = nil // sent with the first heartbeat only
		if tasks = resp.ActiveTasks; len(tasks) == 0 {
			time.Sleep(100 * time.Millisecond) // the next heartbeat, sooner than the interval it was given
		}
	}
	if len(tasks) != 1 || tasks[0].SubtopologyID != "0" || !slices.Equal(tasks[0].Partitions, []int32{0, 1}) {
		t.Fatalf("active tasks %+v, want subtopology 0, partitions 0 and 1", tasks)
	}

	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups = []string{app}
	dr := c.Request(t, coordinator, d).(*kmsg.StreamsGroupDescribeResponse)
	if len(dr.Groups) != 1 {
		t.Fatalf("StreamsGroupDescribe: %d groups", len(dr.Groups))
	}
	g := dr.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		t.Fatalf("StreamsGroupDescribe: %v", err)
	}
	if len(g.Members) != 1 || g.Members[0].MemberID != member {
		t.Errorf("members %+v, want %s alone", g.Members, member)
	}
	t.Logf("streams group %s: state %s, epoch %d", g.Group, g.State, g.Epoch)

	req.MemberEpoch = -1 // leave
	if err := kerr.ErrorForCode(c.Request(t, coordinator, req).(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode); err != nil {
		t.Errorf("leaving: %v", err)
	}
}

// TestKafkaStartTwiceHoldsOnce: a test (or its subtest) starting the shared cluster it
// already uses gets the same cluster without taking its lock again; a second hold could wait
// for ever behind an exclusive test that waits for the first.
func TestKafkaStartTwiceHoldsOnce(t *testing.T) {
	if os.Getenv(kafkatest.EnvDir) == "" {
		t.Skip("the shared clusters' locks: run it under make test-kafka")
	}
	c := kafkatest.Start(t, kafkatest.Options{})
	if again := kafkatest.Start(t, kafkatest.Options{}); again != c {
		t.Error("a second Start in the same test gave another cluster")
	}
	t.Run("subtest", func(t *testing.T) {
		if again := kafkatest.Start(t, kafkatest.Options{}); again != c {
			t.Error("a subtest's Start gave another cluster than its parent's")
		}
	})
}
