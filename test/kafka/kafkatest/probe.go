package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestTimeout bounds one probe request: a paused node never answers.
const requestTimeout = 5 * time.Second

// client is the kgo client talking to node id alone.
func (c *Cluster) client(id int) (*kgo.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.clients[id]; cl != nil {
		return cl, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(id)), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return nil, fmt.Errorf("kafkatest: client of node %d: %w", id, err)
	}
	if c.clients == nil {
		c.clients = map[int]*kgo.Client{}
	}
	c.clients[id] = cl
	return cl, nil
}

func (c *Cluster) closeClients() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, cl := range c.clients {
		cl.Close()
		delete(c.clients, id)
	}
}

// ask sends req to node id.
func (c *Cluster) ask(ctx context.Context, id int, req kmsg.Request) (kmsg.Response, error) {
	cl, err := c.client(id)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", id, err)
	}
	return resp, nil
}

// askAny sends req to the running nodes in turn until one answers and check accepts its
// answer, and returns that answer.
func (c *Cluster) askAny(ctx context.Context, req kmsg.Request, check func(kmsg.Response) error) (kmsg.Response, error) {
	var errs []error
	for _, id := range c.NodeIDs() {
		if _, st := c.state(id); st != running {
			continue
		}
		resp, err := c.ask(ctx, id, req)
		if err == nil {
			if err = check(resp); err == nil {
				return resp, nil
			}
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, errors.New("no node is running")
	}
	return nil, errors.Join(errs...)
}

// poll calls f until it succeeds, fails for good (errExited) or ctx ends, and returns f's
// last error.
func poll(ctx context.Context, what string, f func() error) error {
	for {
		err := f()
		if err == nil || errors.Is(err, errExited) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kafkatest: %s: %w (last: %v)", what, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func metadata(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{} // none, unless named
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func brokerIDs(resp *kmsg.MetadataResponse) []int {
	var ids []int
	for _, b := range resp.Brokers {
		ids = append(ids, int(b.NodeID))
	}
	return ids
}

// serving is nil once node id has the cluster's features and every running node lists
// the nodes ids among its live brokers.
func (c *Cluster) serving(ctx context.Context, ids []int) error {
	for _, id := range ids {
		switch _, st := c.state(id); st {
		case gone:
			return c.exitError(id)
		case stopped:
			return fmt.Errorf("kafkatest: node %d is paused", id)
		}
		if err := c.hasFeatures(ctx, id); err != nil {
			return err
		}
	}
	for _, r := range c.NodeIDs() {
		if _, st := c.state(r); st != running {
			continue
		}
		resp, err := c.ask(ctx, r, metadata())
		if err != nil {
			return err
		}
		live := brokerIDs(resp.(*kmsg.MetadataResponse))
		for _, id := range ids {
			if !slices.Contains(live, id) {
				return fmt.Errorf("node %d lists live brokers %v, not yet %d", r, live, id)
			}
		}
	}
	return nil
}

// hasFeatures is nil once node id reports the transaction.version the cluster was formatted
// with among its finalized features (empty until it has read the metadata log).
func (c *Cluster) hasFeatures(ctx context.Context, id int) error {
	resp, err := c.ask(ctx, id, apiVersions())
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.ApiVersionsResponse).ErrorCode); err != nil {
		return fmt.Errorf("node %d: ApiVersions: %w", id, err)
	}
	f := finalizedFeatures(resp.(*kmsg.ApiVersionsResponse))
	if got, want := f["transaction.version"], int16(c.info.Spec.TransactionVersion); got != want {
		return fmt.Errorf("node %d: finalized features %v, not yet transaction.version=%d", id, f, want)
	}
	return nil
}

// apiVersions is an ApiVersions request; from v3 on the broker refuses one without a client
// software name and version.
func apiVersions() *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "kafkatest"
	req.ClientSoftwareVersion = "1"
	return req
}

func finalizedFeatures(resp *kmsg.ApiVersionsResponse) map[string]int16 {
	f := map[string]int16{}
	for _, ff := range resp.FinalizedFeatures {
		f[ff.Name] = ff.MaxVersionLevel
	}
	return f
}

// waitServing waits until the nodes ids serve (see serving); a node whose JVM ended is an
// error at once.
func (c *Cluster) waitServing(ctx context.Context, ids []int) error {
	return poll(ctx, fmt.Sprintf("waiting for nodes %v of %s to serve", ids, c.dir), func() error {
		return c.serving(ctx, ids)
	})
}

// healthy is nil when every node runs and serves and every partition of every topic has a
// leader and its whole replica set in sync.
func (c *Cluster) healthy(ctx context.Context) error {
	ids := c.NodeIDs()
	if err := c.serving(ctx, ids); err != nil {
		return err
	}
	for _, id := range ids {
		req := kmsg.NewPtrMetadataRequest() // nil Topics: all of them
		resp, err := c.ask(ctx, id, req)
		if err != nil {
			return err
		}
		for _, t := range resp.(*kmsg.MetadataResponse).Topics {
			for _, p := range t.Partitions {
				if p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
					return fmt.Errorf("node %d: %s-%d has leader %d, replicas %v, in sync %v",
						id, *t.Topic, p.Partition, p.Leader, p.Replicas, p.ISR)
				}
			}
		}
	}
	return nil
}

// heal resumes paused nodes and starts dead ones, then waits until the cluster is healthy:
// what a test that killed or paused nodes leaves behind is repaired here.
func (c *Cluster) heal() error {
	for _, id := range c.NodeIDs() {
		switch _, st := c.state(id); st {
		case stopped:
			if err := c.signal(id, syscall.SIGCONT); err != nil {
				return err
			}
		case gone:
			if err := c.startNode(id); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return poll(ctx, "waiting for "+c.dir+" to be healthy (all nodes up, every partition in sync)", func() error {
		return c.healthy(ctx)
	})
}

// restartNodes stops (SIGTERM) those of the nodes ids that run, starts them all again and
// waits until they serve. All are started before waiting: a quorum of nodes that all went
// down only comes back together.
func (c *Cluster) restartNodes(ids []int) error {
	for _, id := range ids {
		if err := c.shutdownNode(id); err != nil {
			return err
		}
	}
	for _, id := range ids {
		if err := c.startNode(id); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return c.waitServing(ctx, ids)
}

// Coordinator key types of FindCoordinator.
const (
	groupKey = 0
	txnKey   = 1
)

// coordinator asks for the node coordinating key (a group or a transactional ID).
func (c *Cluster) coordinator(ctx context.Context, keyType int8, key string) (int, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = keyType
	req.CoordinatorKey = key
	req.CoordinatorKeys = []string{key}
	resp, err := c.askAny(ctx, req, func(r kmsg.Response) error {
		resp := r.(*kmsg.FindCoordinatorResponse)
		if len(resp.Coordinators) > 0 {
			return kerr.ErrorForCode(resp.Coordinators[0].ErrorCode)
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	if err != nil {
		return 0, err
	}
	fc := resp.(*kmsg.FindCoordinatorResponse)
	if len(fc.Coordinators) > 0 {
		return int(fc.Coordinators[0].NodeID), nil
	}
	return int(fc.NodeID), nil
}

// warmCoordinators waits until a group and a transaction coordinator can be found, which
// creates __consumer_offsets and __transaction_state.
func (c *Cluster) warmCoordinators(ctx context.Context) error {
	for _, keyType := range []int8{groupKey, txnKey} {
		err := poll(ctx, "creating the internal topics", func() error {
			_, err := c.coordinator(ctx, keyType, "kafkatest-warm-up")
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// controller asks for the active controller: the leader of the metadata log.
func (c *Cluster) controller(ctx context.Context) (int, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rp.Partition = 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.askAny(ctx, req, func(r kmsg.Response) error {
		resp := r.(*kmsg.DescribeQuorumResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("DescribeQuorum: unexpected answer %+v", resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return err
		}
		if p.LeaderID < 0 {
			return errors.New("DescribeQuorum: no leader")
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return int(resp.(*kmsg.DescribeQuorumResponse).Topics[0].Partitions[0].LeaderID), nil
}

// leader asks for the leader of topic's partition.
func (c *Cluster) leader(ctx context.Context, topic string, partition int32) (int, error) {
	var leader int
	_, err := c.askAny(ctx, metadata(topic), func(r kmsg.Response) error {
		for _, t := range r.(*kmsg.MetadataResponse).Topics {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				return fmt.Errorf("%s: %w", topic, err)
			}
			for _, p := range t.Partitions {
				if p.Partition != partition {
					continue
				}
				if p.Leader < 0 {
					return fmt.Errorf("%s-%d: no leader", topic, partition)
				}
				leader = int(p.Leader)
				return nil
			}
		}
		return fmt.Errorf("%s-%d: no such partition", topic, partition)
	})
	return leader, err
}
