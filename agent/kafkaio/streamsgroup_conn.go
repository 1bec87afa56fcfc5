package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The streams group requests (KIP-1071) go through a franz-go client: sarama has neither
// their messages nor a way to send a request it does not know, and kmsg has them. The client
// does not route them to the group's coordinator by itself (franz-go v1.22.3 fails them as
// unknown to it), so groupConn finds the coordinator with FindCoordinator and sends them to
// that broker.

// streamsGroupAPIKey is StreamsGroupHeartbeat's key, which a broker with streams groups
// lists in its ApiVersions.
const streamsGroupAPIKey = 88

// ErrStreamsGroupsUnsupported is wrapped by the error of a member whose group coordinator
// does not run streams groups.
var ErrStreamsGroupsUnsupported = errors.New("the broker does not support streams groups")

// groupConn talks to the coordinator of one group.
type groupConn struct {
	cl    *kgo.Client
	group string

	mu          sync.Mutex
	coordinator int32  // -1 while unknown
	addr        string // the coordinator's host:port
	checked     int32  // the coordinator whose ApiVersions were checked, -1 for none
}

// newGroupConn makes a client of brokers with sc's client id, timeouts, TLS and SASL.
func newGroupConn(brokers []string, sc *sarama.Config, group string) (*groupConn, error) {
	opts, err := kgoOptions(sc)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(brokers...))...)
	if err != nil {
		return nil, fmt.Errorf("streams group %s: client of %v: %w", group, brokers, err)
	}
	return &groupConn{cl: cl, group: group, coordinator: -1, checked: -1}, nil
}

// kgoOptions carries a sarama config's client id, timeouts, TLS and SASL over to franz-go,
// so that the group's requests go to the brokers as the agent's other clients do.
func kgoOptions(sc *sarama.Config) ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.ClientID(sc.ClientID),
		kgo.DialTimeout(sc.Net.DialTimeout),
		kgo.MetadataMaxAge(sc.Metadata.RefreshFrequency),
	}
	if sc.Net.TLS.Enable {
		opts = append(opts, kgo.DialTLSConfig(sc.Net.TLS.Config.Clone()))
	}
	if sc.Net.SASL.Enable {
		user, pass := sc.Net.SASL.User, sc.Net.SASL.Password
		switch sc.Net.SASL.Mechanism {
		case sarama.SASLTypePlaintext:
			opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case sarama.SASLTypeSCRAMSHA256:
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case sarama.SASLTypeSCRAMSHA512:
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("not supported yet: sasl.mechanism %s with group.protocol = streams", sc.Net.SASL.Mechanism)
		}
	}
	return opts, nil
}

func (c *groupConn) close() { c.cl.Close() }

// forget drops the coordinator: the next request finds it again.
func (c *groupConn) forget() {
	c.mu.Lock()
	c.coordinator = -1
	c.mu.Unlock()
}

// request sends req to the group's coordinator, finding it first if needed. A transport
// error forgets the coordinator.
func (c *groupConn) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	id, err := c.findCoordinator(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		c.forget()
		return nil, fmt.Errorf("%s to the coordinator of streams group %s (node %d): %w", kmsg.NameForKey(req.Key()), c.group, id, err)
	}
	return resp, nil
}

// findCoordinator returns the group's coordinator, asking a broker if it is not known, and
// checks once per coordinator that it runs streams groups.
func (c *groupConn) findCoordinator(ctx context.Context) (int32, error) {
	c.mu.Lock()
	id, addr, checked := c.coordinator, c.addr, c.checked
	c.mu.Unlock()
	if id < 0 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = c.group
		req.CoordinatorKeys = []string{c.group}
		resp, err := req.RequestWith(ctx, c.cl)
		if err != nil {
			return -1, fmt.Errorf("finding the coordinator of streams group %s: %w", c.group, err)
		}
		id, addr, err = coordinatorOf(resp, c.group)
		if err != nil {
			return -1, err
		}
	}
	if id != checked {
		if err := c.checkStreamsGroups(ctx, id, addr); err != nil {
			return -1, err
		}
	}
	c.mu.Lock()
	c.coordinator, c.addr, c.checked = id, addr, id
	c.mu.Unlock()
	return id, nil
}

// coordinatorOf reads a FindCoordinator answer (one key, v4+, or the old single one): the
// node and its host:port.
func coordinatorOf(resp *kmsg.FindCoordinatorResponse, group string) (int32, string, error) {
	code, msg, node, host, port := resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port
	if len(resp.Coordinators) > 0 {
		co := resp.Coordinators[0]
		code, msg, node, host, port = co.ErrorCode, co.ErrorMessage, co.NodeID, co.Host, co.Port
	}
	if err := errorFor(code, msg); err != nil {
		return -1, "", fmt.Errorf("finding the coordinator of streams group %s: %w", group, err)
	}
	return node, net.JoinHostPort(host, strconv.Itoa(int(port))), nil
}

// checkStreamsGroups asks the coordinator which requests it serves: a broker without
// StreamsGroupHeartbeat (Kafka before 4.1, streams groups turned off, the embedded broker)
// gets an error that names it and the mode that works.
func (c *groupConn) checkStreamsGroups(ctx context.Context, id int32, addr string) error {
	req := kmsg.NewPtrApiVersionsRequest()
	// A broker refuses ApiVersions v3+ without a software name and version (KIP-511).
	req.ClientSoftwareName, req.ClientSoftwareVersion = "stoatflow", "1"
	resp, err := c.cl.Broker(int(id)).Request(ctx, req)
	if err == nil {
		err = kerr.ErrorForCode(resp.(*kmsg.ApiVersionsResponse).ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("ApiVersions to the coordinator of streams group %s (node %d): %w", c.group, id, err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	for _, k := range av.ApiKeys {
		if k.ApiKey == streamsGroupAPIKey {
			return nil
		}
	}
	return c.unsupported(id, addr)
}

// unsupported is the error for a coordinator without streams groups.
func (c *groupConn) unsupported(id int32, addr string) error {
	return fmt.Errorf("%w (KIP-1071, StreamsGroupHeartbeat): broker %s (node %d), the coordinator of group %s, does not serve it; "+
		"group.protocol = \"streams\" needs Apache Kafka 4.1 or later with streams groups enabled; "+
		"group.protocol = \"classic\" works with this broker", ErrStreamsGroupsUnsupported, addr, id, c.group)
}

// errorFor is a response's error code and message as one error, nil for none.
func errorFor(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	if msg != nil && strings.TrimSpace(*msg) != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

// unsupportedNow is the error for the current coordinator refusing the streams group
// requests (a broker that lists them with streams groups turned off).
func (c *groupConn) unsupportedNow(cause error) error {
	c.mu.Lock()
	id, addr := c.coordinator, c.addr
	c.mu.Unlock()
	return fmt.Errorf("%w (%v)", c.unsupported(id, addr), cause)
}
