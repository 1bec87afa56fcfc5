package kafkaio

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Embedded is an in-process, single-broker, Kafka-protocol broker (kfake). It keeps
// everything in memory: its topics, offsets and groups are gone when it closes.
//
// Like a Kafka broker with default settings it creates topics with one partition when a
// CreateTopics request leaves the count to the broker; unlike one it never creates a topic
// because a client asked for its metadata, so a missing topic is reported, not invented.
type Embedded struct {
	cluster *kfake.Cluster
}

// StartEmbedded starts the broker listening on listen ("127.0.0.1:0" picks a free port).
// logger receives the broker's warnings and errors; its requests are logged at debug
// level. A nil logger discards everything.
func StartEmbedded(listen string, logger *slog.Logger) (*Embedded, error) {
	if _, _, err := net.SplitHostPort(listen); err != nil {
		return nil, fmt.Errorf("embedded broker: listen address %q: %w", listen, err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cluster, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.ClusterID("stoatflow-embedded"),
		kfake.DefaultNumPartitions(1),
		// kfake always asks for 127.0.0.1:<port>; honour the host the operator chose.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, listen)
		}),
		kfake.WithLogger(kfakeLogger{logger}),
	)
	if err != nil {
		return nil, fmt.Errorf("embedded broker: listen on %q: %w", listen, err)
	}
	return &Embedded{cluster: cluster}, nil
}

// Addrs returns the broker addresses to give to clients as bootstrap servers.
func (e *Embedded) Addrs() []string { return e.cluster.ListenAddrs() }

// Close stops the broker and drops all its data. Calling it again does nothing.
func (e *Embedded) Close() { e.cluster.Close() }

// kfakeLogger forwards kfake's log lines to slog. kfake logs every request at its info
// level, which is debug detail for an operator, and warns when its own handling of an
// EndTxn took over 10 ms, which a busy machine causes and which says nothing about the
// application: debug too.
type kfakeLogger struct{ logger *slog.Logger }

// kfakeSlowTxn starts kfake's warning about its own slow EndTxn.
const kfakeSlowTxn = "txn: EndTxn slow "

func (l kfakeLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	var sl slog.Level
	switch {
	case level == kfake.LogLevelError:
		sl = slog.LevelError
	case level == kfake.LogLevelWarn && strings.HasPrefix(format, kfakeSlowTxn):
		sl = slog.LevelDebug
	case level == kfake.LogLevelWarn:
		sl = slog.LevelWarn
	case level == kfake.LogLevelInfo:
		sl = slog.LevelDebug
	default:
		return
	}
	ctx := context.Background()
	if !l.logger.Enabled(ctx, sl) {
		return
	}
	l.logger.Log(ctx, sl, fmt.Sprintf(format, args...), "component", "embedded-broker")
}
