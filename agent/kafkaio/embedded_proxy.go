package kafkaio

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kfake"
)

// StartEmbeddedBehind starts the broker on ln but advertises advertise ("host:port") in
// its metadata, as a broker behind a proxy or a port mapping advertises the address its
// clients reach it on (Kafka's advertised.listeners). Clients learn broker addresses from
// metadata, so without this they would leave the proxy after their first request. Addrs
// returns advertise. The broker owns ln: it closes it in Close, or at once on an error.
func StartEmbeddedBehind(ln net.Listener, advertise string, logger *slog.Logger) (*Embedded, error) {
	if ln == nil {
		return nil, errors.New("embedded broker: nil listener")
	}
	if err := checkAdvertised(advertise); err != nil {
		_ = ln.Close()
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var used atomic.Bool
	cluster, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.ClusterID("stoatflow-embedded"),
		kfake.DefaultNumPartitions(1),
		// kfake advertises what its listener's Addr reports.
		kfake.ListenFn(func(string, string) (net.Listener, error) {
			if used.Swap(true) {
				return nil, errors.New("a broker behind a proxy has exactly one listener")
			}
			return advertisedListener{Listener: ln, addr: advertisedAddr(advertise)}, nil
		}),
		kfake.WithLogger(kfakeLogger{logger}),
	)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("embedded broker on %s advertising %s: %w", ln.Addr(), advertise, err)
	}
	return &Embedded{cluster: cluster}, nil
}

func checkAdvertised(advertise string) error {
	host, port, err := net.SplitHostPort(advertise)
	if err != nil {
		return fmt.Errorf("embedded broker: advertised address %q: %w", advertise, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 || host == "" {
		return fmt.Errorf("embedded broker: advertised address %q: want host:port with a port in 1..65535", advertise)
	}
	return nil
}

type advertisedListener struct {
	net.Listener
	addr advertisedAddr
}

func (l advertisedListener) Addr() net.Addr { return l.addr }

type advertisedAddr string

func (advertisedAddr) Network() string  { return "tcp" }
func (a advertisedAddr) String() string { return string(a) }
