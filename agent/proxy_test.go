package agent

import (
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
)

// tcpProxy forwards TCP connections to one target and can drop them all at once, as a
// broker restart or a network fault does to a Kafka client.
type tcpProxy struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	conns    map[net.Conn]struct{} // both ends of every forwarded connection
	refusing bool
	closed   bool

	accepted atomic.Int64 // connections forwarded
	refused  atomic.Int64 // connections closed on arrival while refusing
	wg       sync.WaitGroup
}

// startProxy listens on a free loopback port and forwards to target until the test ends.
func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) Addr() string { return p.ln.Addr().String() }

// Cut resets every open connection and returns how many client connections it dropped.
func (p *tcpProxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		resetConn(c)
	}
	n := len(p.conns) / 2
	clear(p.conns)
	return n
}

// open returns how many client connections are being forwarded.
func (p *tcpProxy) open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2
}

// Refuse cuts every connection and closes new ones on arrival until Restore.
func (p *tcpProxy) Refuse() int {
	p.mu.Lock()
	p.refusing = true
	p.mu.Unlock()
	return p.Cut()
}

// Restore forwards new connections again.
func (p *tcpProxy) Restore() {
	p.mu.Lock()
	p.refusing = false
	p.mu.Unlock()
}

func (p *tcpProxy) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refusing := p.refusing
		p.mu.Unlock()
		if refusing {
			p.refused.Add(1)
			resetConn(c)
			continue
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

func (p *tcpProxy) forward(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		resetConn(client)
		return
	}
	p.mu.Lock()
	if p.closed || p.refusing {
		// Cut or Refuse ran while this connection was being dialled.
		p.mu.Unlock()
		resetConn(client)
		resetConn(server)
		return
	}
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	p.accepted.Add(1)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	// One direction ended: end the other one too, as a dropped connection does.
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
	resetConn(client)
	resetConn(server)
	<-done
}

// resetConn closes c with an RST rather than a FIN, so the peer sees the connection fail, not end.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// proxiedBroker is the embedded broker behind a tcpProxy: its metadata names the proxy, so
// every client that bootstraps from Addrs() keeps going through the proxy.
type proxiedBroker struct {
	proxy   *tcpProxy
	backend string // the broker's own listener, for test clients that must bypass faults
}

// Addrs returns the bootstrap servers to give the client under test.
func (b *proxiedBroker) Addrs() []string { return []string{b.proxy.Addr()} }

// direct returns a sarama config whose connections to the proxy's address go straight to
// the broker, so that the test's own producers and readers are not hit by the faults.
func (b *proxiedBroker) direct(c *sarama.Config) *sarama.Config {
	c.Net.Proxy.Enable = true
	c.Net.Proxy.Dialer = bypassDialer{from: b.proxy.Addr(), to: b.backend, d: net.Dialer{Timeout: 5 * time.Second}}
	return c
}

type bypassDialer struct {
	from, to string
	d        net.Dialer
}

func (b bypassDialer) Dial(network, addr string) (net.Conn, error) {
	if addr == b.from {
		addr = b.to
	}
	return b.d.Dial(network, addr)
}

// testProxiedBroker starts the embedded broker behind a proxy with the given topics.
func testProxiedBroker(t *testing.T, partitions int32, topics ...string) *proxiedBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &proxiedBroker{proxy: startProxy(t, ln.Addr().String()), backend: ln.Addr().String()}
	emb, err := kafkaio.StartEmbeddedBehind(ln, b.proxy.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Close)
	if got := emb.Addrs(); len(got) != 1 || got[0] != b.proxy.Addr() {
		t.Fatalf("broker addresses %v, want the proxy's %s", got, b.proxy.Addr())
	}
	specs := map[string]kafkaio.TopicSpec{}
	for _, tp := range topics {
		specs[tp] = kafkaio.TopicSpec{Partitions: partitions, ReplicationFactor: -1}
	}
	if err := kafkaio.EnsureTopics(b.Addrs(), b.direct(saramaTestConfig()), specs); err != nil {
		t.Fatal(err)
	}
	return b
}

// pollFor polls cond until it holds or within passes.
func pollFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestProxiedBrokerKeepsClientsOnTheProxy checks the ground the fault tests stand on: the
// broker's metadata names the proxy, so a client that reconnects after a cut comes back
// through the proxy, and a refused connection fails the client's request.
func TestProxiedBrokerKeepsClientsOnTheProxy(t *testing.T) {
	b := testProxiedBroker(t, 2, "in")
	c := saramaTestConfig()
	c.Metadata.Retry.Max = 0
	client, err := sarama.NewClient(b.Addrs(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if brokers := client.Brokers(); len(brokers) != 1 || brokers[0].Addr() != b.proxy.Addr() {
		t.Fatalf("metadata brokers %v, want only the proxy %s", brokers, b.proxy.Addr())
	}
	leader, err := client.Leader("in", 0)
	if err != nil {
		t.Fatal(err)
	}
	if leader.Addr() != b.proxy.Addr() {
		t.Fatalf("leader of in-0 is %s, want the proxy %s", leader.Addr(), b.proxy.Addr())
	}
	before := b.proxy.accepted.Load()
	if n := b.proxy.Cut(); n < 1 {
		t.Fatalf("cut %d connections, want the client's", n)
	}
	pollFor(t, 10*time.Second, "the client never came back through the proxy", func() bool {
		_, err := client.GetOffset("in", 0, sarama.OffsetNewest)
		return err == nil && b.proxy.accepted.Load() > before
	})

	b.proxy.Refuse()
	_, err = client.GetOffset("in", 1, sarama.OffsetNewest)
	if err == nil {
		t.Fatal("a request while the proxy refuses connections succeeded")
	}
	if b.proxy.refused.Load() < 1 {
		t.Fatalf("the proxy refused no connection (err %v)", err)
	}
	b.proxy.Restore()
	pollFor(t, 10*time.Second, "the client never reconnected after Restore", func() bool {
		_, err := client.GetOffset("in", 1, sarama.OffsetNewest)
		return err == nil
	})

	// A test client configured with direct never touches the proxy.
	d, err := sarama.NewClient(b.Addrs(), b.direct(saramaTestConfig()))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	b.proxy.Refuse()
	defer b.proxy.Restore()
	if _, err := d.GetOffset("in", 0, sarama.OffsetNewest); err != nil {
		t.Fatalf("a direct client failed while the proxy refuses: %v", err)
	}
}

func TestStartEmbeddedBehindRejectsBadAddresses(t *testing.T) {
	for _, adv := range []string{"", "127.0.0.1", "127.0.0.1:0", ":9092", "127.0.0.1:x", "127.0.0.1:70000"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, err = kafkaio.StartEmbeddedBehind(ln, adv, nil)
		if err == nil || !strings.Contains(err.Error(), "advertised address") {
			t.Fatalf("advertise %q: err = %v, want one naming the advertised address", adv, err)
		}
		if _, err := ln.Accept(); err == nil {
			t.Fatalf("advertise %q: the listener was left open", adv)
		}
	}
	if _, err := kafkaio.StartEmbeddedBehind(nil, "127.0.0.1:9092", nil); err == nil || !strings.Contains(err.Error(), "nil listener") {
		t.Fatalf("nil listener: err = %v", err)
	}
}
