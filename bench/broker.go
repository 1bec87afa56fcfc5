package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// The brokers the scenarios run on (-brokers), in the order the results show them.
const (
	// brokerKfake is the in-process broker (kafkaio.StartEmbedded), a fresh one in the harness's
	// process for every run.
	brokerKfake = "kfake"
	// apacheKafka is Apache Kafka 4.4, one combined broker and controller node in a JVM of
	// its own (test/kafka/kafkatest), started once per harness run.
	apacheKafka = "kafka"
)

var brokerNames = []string{brokerKfake, apacheKafka}

var brokerLabels = map[string]string{
	brokerKfake: "kfake (in process)",
	apacheKafka: "Apache Kafka 4.4 (one node)",
}

// parseBrokers reads the -brokers list, keeping brokerNames' order.
func parseBrokers(list string) ([]string, error) {
	want := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(brokerNames, n) {
			return nil, fmt.Errorf("-brokers: unknown broker %q (have: %s)", n, strings.Join(brokerNames, ", "))
		}
		want[n] = true
	}
	var out []string
	for _, n := range brokerNames {
		if want[n] {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-brokers: no broker in %q", list)
	}
	return out, nil
}

// runsOn says whether a scenario runs on a broker: Kafka Streams needs Apache Kafka (its
// classic group assignor and transactions are not proven on kfake), the others run on both.
func (s scenario) runsOn(broker string) bool {
	return !s.kstreams || broker == apacheKafka
}

// benchBroker is the broker of one kind the runs use.
type benchBroker interface {
	// name is the broker's in -brokers.
	name() string
	// fresh readies the broker for a run: the input and output topics exist, empty, and
	// nothing is left of an earlier run (no other topic, no group). done ends the run's use
	// of the broker.
	fresh() (addrs []string, done func(), err error)
	// close stops the broker; keepLogs keeps what a failed run's diagnosis needs.
	close(keepLogs bool) error
}

// startBrokers starts the brokers of the list.
func startBrokers(names []string) (map[string]benchBroker, error) {
	out := map[string]benchBroker{}
	for _, n := range names {
		switch n {
		case brokerKfake:
			out[n] = kfakeBroker{}
		case apacheKafka:
			fmt.Fprintln(os.Stderr, "bench: starting Apache Kafka 4.4")
			k, err := startApacheKafka()
			if err != nil {
				for _, b := range out {
					_ = b.close(false)
				}
				return nil, fmt.Errorf("-brokers %s: %w", n, err)
			}
			out[n] = k
		}
	}
	return out, nil
}

// kfakeBroker starts a new in-process broker for every run, whose memory is released when
// the run ends.
type kfakeBroker struct{}

func (kfakeBroker) fresh() ([]string, func(), error) {
	emb, err := broker()
	if err != nil {
		return nil, nil, err
	}
	return emb.Addrs(), emb.Close, nil
}

func (kfakeBroker) name() string { return brokerKfake }

func (kfakeBroker) close(bool) error { return nil }

// apacheKafkaBroker is one Apache Kafka node for the whole harness run: warm, as a broker in
// production is, its log directory emptied of the previous run's topics before each run.
type apacheKafkaBroker struct {
	dir     string
	cluster *kafkatest.Cluster
}

// kafkaJVM says how the broker's JVM runs, for the report.
func kafkaJVM() string { return strings.Join(kafkatest.ServerJVMOptions(), " ") }

func startApacheKafka() (*apacheKafkaBroker, error) {
	dir, err := os.MkdirTemp("", "stoatflow-bench-kafka-")
	if err != nil {
		return nil, err
	}
	c, err := kafkatest.Own(dir, kafkatest.Spec{Nodes: 1, Server: true})
	if err != nil {
		if errors.Is(err, kafkatest.ErrMissingTool) {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%w (-brokers kfake runs without Java)", err)
		}
		return nil, fmt.Errorf("%w (logs kept in %s)", err, dir)
	}
	return &apacheKafkaBroker{dir: dir, cluster: c}, nil
}

func (*apacheKafkaBroker) name() string { return apacheKafka }

func (k *apacheKafkaBroker) close(keepLogs bool) error {
	err := k.cluster.Stop()
	if keepLogs {
		fmt.Fprintf(os.Stderr, "bench: kept Apache Kafka's log for the failed runs: %s\n", k.cluster.LogFile(1))
		return err
	}
	return errors.Join(err, os.RemoveAll(k.dir))
}

// cleanTimeout bounds emptying the broker between runs.
const cleanTimeout = time.Minute

func (k *apacheKafkaBroker) fresh() ([]string, func(), error) {
	addrs := k.cluster.Bootstrap()
	if err := emptyBroker(addrs); err != nil {
		return nil, nil, fmt.Errorf("emptying Apache Kafka for the run (log: %s): %w", k.cluster.LogFile(1), err)
	}
	if err := createTopics(addrs); err != nil {
		return nil, nil, fmt.Errorf("making the run's topics on Apache Kafka (log: %s): %w", k.cluster.LogFile(1), err)
	}
	return addrs, func() {}, nil
}

func adminConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V3_6_0_0
	return c
}

// emptyBroker deletes every consumer group and every topic but Kafka's own (__*), and waits
// until the broker no longer lists those topics.
func emptyBroker(addrs []string) error {
	admin, err := sarama.NewClusterAdmin(addrs, adminConfig())
	if err != nil {
		return err
	}
	defer admin.Close()
	groups, err := admin.ListConsumerGroups()
	if err != nil {
		return fmt.Errorf("list groups: %w", err)
	}
	for g := range groups {
		if err := deleteGroup(admin, g); err != nil {
			// A dynamic member that did not leave (a scenario process that was killed) keeps
			// its group until its session times out: the next run of that scenario waits
			// for it, which its start → RUNNING time shows.
			fmt.Fprintf(os.Stderr, "bench: Apache Kafka: group %s left from an earlier run: %v\n", g, err)
		}
	}
	topics, err := admin.ListTopics()
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	var doomed []string
	for name := range topics {
		if !strings.HasPrefix(name, "__") {
			doomed = append(doomed, name)
		}
	}
	for _, name := range doomed {
		if err := admin.DeleteTopic(name); err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return fmt.Errorf("delete topic %s: %w", name, err)
		}
	}
	return pollUntil(cleanTimeout, "the deleted topics to go", func() (bool, error) {
		topics, err := admin.ListTopics()
		if err != nil {
			return false, err
		}
		return !slices.ContainsFunc(doomed, func(n string) bool { _, ok := topics[n]; return ok }), nil
	})
}

// deleteGroup deletes a group, first removing its static members: a static member does not
// leave when it stops (the ceiling's sarama consumer is one), it waits to be replaced.
func deleteGroup(admin sarama.ClusterAdmin, group string) error {
	err := admin.DeleteConsumerGroup(group)
	if !errors.Is(err, sarama.ErrNonEmptyGroup) {
		if errors.Is(err, sarama.ErrGroupIDNotFound) {
			return nil
		}
		return err
	}
	descs, derr := admin.DescribeConsumerGroups([]string{group})
	if derr != nil {
		return errors.Join(err, derr)
	}
	var static []string
	for _, d := range descs {
		for _, m := range d.Members {
			if m.GroupInstanceId != nil {
				static = append(static, *m.GroupInstanceId)
			}
		}
	}
	if len(static) == 0 {
		return err
	}
	if _, err := admin.RemoveMemberFromConsumerGroup(group, static); err != nil {
		return fmt.Errorf("remove the static members %v: %w", static, err)
	}
	return admin.DeleteConsumerGroup(group)
}

// createTopics creates the input and output topics and waits until the leader of every
// partition answers for it: a topic deleted and made again under the same name is served
// by its new partitions a moment after the metadata lists them.
func createTopics(addrs []string) error {
	err := kafkaio.EnsureTopics(addrs, adminConfig(), map[string]kafkaio.TopicSpec{
		inputTopic:  {Partitions: partitions, ReplicationFactor: -1},
		outputTopic: {Partitions: partitions, ReplicationFactor: -1},
	})
	if err != nil {
		return err
	}
	client, err := sarama.NewClient(addrs, adminConfig())
	if err != nil {
		return err
	}
	defer client.Close()
	return pollUntil(cleanTimeout, "the leaders of the new topics", func() (bool, error) {
		if err := client.RefreshMetadata(inputTopic, outputTopic); err != nil {
			return false, nil
		}
		for _, topic := range []string{inputTopic, outputTopic} {
			for p := range int32(partitions) {
				// ListOffsets asks the partition's leader itself.
				if _, err := client.GetOffset(topic, p, sarama.OffsetNewest); err != nil {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// pollUntil calls done every 50 ms until it reports true, fails, or timeout passes.
func pollUntil(timeout time.Duration, what string, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := done()
		switch {
		case err != nil:
			return fmt.Errorf("waiting for %s: %w", what, err)
		case ok:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("waiting for %s: not done after %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
