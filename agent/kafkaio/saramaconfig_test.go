package kafkaio

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/agent/config"
)

// loadStreams parses a config whose [streams] table holds extra, in dir (which
// gets the script the config needs).
func loadStreams(t *testing.T, dir, extra string) *config.Config {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "p.lua"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	data := "[agent]\nscripts = [\"p.lua\"]\n[streams]\napplication.id = \"app\"\nbootstrap.servers = \"k:9092\"\n" + extra
	cfg, err := config.Parse([]byte(data), dir, "agent.toml")
	if err != nil {
		t.Fatalf("config:\n%v", err)
	}
	return cfg
}

func mustSarama(t *testing.T, cfg *config.Config, role Role) *sarama.Config {
	t.Helper()
	sc, err := SaramaConfig(cfg, role)
	if err != nil {
		t.Fatalf("SaramaConfig(%v): %v", role, err)
	}
	return sc
}

func TestSaramaMapping(t *testing.T) {
	cases := []struct {
		streams string
		role    Role
		get     func(*sarama.Config) any
		want    any
	}{
		{`client.rack = "r1"`, RoleConsumer, func(c *sarama.Config) any { return c.RackID }, "r1"},
		{`request.timeout.ms = 1234`, RoleAdmin, func(c *sarama.Config) any { return c.Net.ReadTimeout }, 1234 * time.Millisecond},
		{`request.timeout.ms = 1234`, RoleProducer, func(c *sarama.Config) any { return c.Producer.Timeout }, 1234 * time.Millisecond},
		{`request.timeout.ms = 1234`, RoleAdmin, func(c *sarama.Config) any { return c.Admin.Timeout }, 1234 * time.Millisecond},
		{`socket.connection.setup.timeout.ms = "2s"`, RoleConsumer, func(c *sarama.Config) any { return c.Net.DialTimeout }, 2 * time.Second},
		{`metadata.max.age.ms = "1m"`, RoleProducer, func(c *sarama.Config) any { return c.Metadata.RefreshFrequency }, time.Minute},
		{`retry.backoff.ms = 7`, RoleConsumer, func(c *sarama.Config) any { return c.Consumer.Retry.Backoff }, 7 * time.Millisecond},
		{`retry.backoff.ms = 7`, RoleProducer, func(c *sarama.Config) any { return c.Producer.Retry.Backoff }, 7 * time.Millisecond},
		{`retry.backoff.ms = 7`, RoleAdmin, func(c *sarama.Config) any { return c.Metadata.Retry.Backoff }, 7 * time.Millisecond},
		{`session.timeout.ms = 20000`, RoleConsumer, func(c *sarama.Config) any { return c.Consumer.Group.Session.Timeout }, 20 * time.Second},
		{`heartbeat.interval.ms = 900`, RoleConsumer, func(c *sarama.Config) any { return c.Consumer.Group.Heartbeat.Interval }, 900 * time.Millisecond},
		{`max.poll.interval.ms = 60000`, RoleConsumer, func(c *sarama.Config) any { return c.Consumer.Group.Rebalance.Timeout }, time.Minute},
		{`fetch.min.bytes = 10`, RoleConsumer, func(c *sarama.Config) any { return c.Consumer.Fetch.Min }, int32(10)},
		{`fetch.max.bytes = 1000000`, RoleConsumer, func(c *sarama.Config) any { return c.Consumer.Fetch.MaxBytes }, int32(1000000)},
		{`max.partition.fetch.bytes = 65536`, RoleConsumer, func(c *sarama.Config) any { return c.Consumer.Fetch.Default }, int32(65536)},
		{`fetch.max.wait.ms = 200`, RoleConsumer, func(c *sarama.Config) any { return c.Consumer.MaxWaitTime }, 200 * time.Millisecond},
		{`auto.offset.reset = "latest"`, RoleConsumer, func(c *sarama.Config) any { return c.Consumer.Offsets.Initial }, sarama.OffsetNewest},
		{`isolation.level = "read_committed"`, RoleConsumer, func(c *sarama.Config) any { return c.Consumer.IsolationLevel }, sarama.ReadCommitted},
		{`group.instance.id = "wc-1"`, RoleConsumer, func(c *sarama.Config) any { return c.Consumer.Group.InstanceId }, "wc-1"},
		{`buffered.records.per.partition = 64`, RoleConsumer, func(c *sarama.Config) any { return c.ChannelBufferSize }, 64},
		{`buffered.records.per.partition = 64`, RoleProducer, func(c *sarama.Config) any { return c.ChannelBufferSize }, sarama.NewConfig().ChannelBufferSize},
		{`linger.ms = 20`, RoleProducer, func(c *sarama.Config) any { return c.Producer.Flush.Frequency }, 20 * time.Millisecond},
		{`batch.size = 4096`, RoleProducer, func(c *sarama.Config) any { return c.Producer.Flush.Bytes }, 4096},
		{"linger.ms = 0\nbatch.size = 4096", RoleProducer, func(c *sarama.Config) any { return c.Producer.Flush.Bytes }, 0},
		{`compression.type = "zstd"`, RoleProducer, func(c *sarama.Config) any { return c.Producer.Compression }, sarama.CompressionZSTD},
		{`compression.type = "lz4"`, RoleProducer, func(c *sarama.Config) any { return c.Producer.Compression }, sarama.CompressionLZ4},
		{`acks = 1`, RoleProducer, func(c *sarama.Config) any { return c.Producer.RequiredAcks }, sarama.WaitForLocal},
		{`acks = 1`, RoleProducer, func(c *sarama.Config) any { return c.Producer.Idempotent }, false},
		{`acks = 1`, RoleProducer, func(c *sarama.Config) any { return c.Net.MaxOpenRequests }, 5},
		{`acks = "0"`, RoleProducer, func(c *sarama.Config) any { return c.Producer.RequiredAcks }, sarama.NoResponse},
		{`max.request.size = 2000000`, RoleProducer, func(c *sarama.Config) any { return c.Producer.MaxMessageBytes }, 2000000},
		{`retries = 4`, RoleProducer, func(c *sarama.Config) any { return c.Producer.Retry.Max }, 4},
		{"delivery.timeout.ms = 1000\nretry.backoff.ms = 100", RoleProducer, func(c *sarama.Config) any { return c.Producer.Retry.Max }, 10},
		{`transaction.timeout.ms = "30s"`, RoleProducer, func(c *sarama.Config) any { return c.Producer.Transaction.Timeout }, 30 * time.Second},
		{"enable.idempotence = false\nmax.in.flight.requests.per.connection = 3", RoleProducer, func(c *sarama.Config) any { return c.Net.MaxOpenRequests }, 3},
		{`client.id = "wc"`, RoleProducer, func(c *sarama.Config) any { return c.ClientID }, "wc-producer"},
		{`admin.client.id = "tools"`, RoleAdmin, func(c *sarama.Config) any { return c.ClientID }, "tools"},
		{`consumer.fetch.min.bytes = 5`, RoleConsumer, func(c *sarama.Config) any { return c.Consumer.Fetch.Min }, int32(5)},
		{"request.timeout.ms = 1000\nconsumer.request.timeout.ms = 2000", RoleConsumer, func(c *sarama.Config) any { return c.Net.ReadTimeout }, 2 * time.Second},
		{"request.timeout.ms = 1000\nconsumer.request.timeout.ms = 2000", RoleProducer, func(c *sarama.Config) any { return c.Net.ReadTimeout }, time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.role.String()+"/"+strings.ReplaceAll(tc.streams, "\n", ";"), func(t *testing.T) {
			sc := mustSarama(t, loadStreams(t, t.TempDir(), tc.streams), tc.role)
			if got := tc.get(sc); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSaramaDefaults(t *testing.T) {
	cfg := loadStreams(t, t.TempDir(), "")
	con := mustSarama(t, cfg, RoleConsumer)
	pro := mustSarama(t, cfg, RoleProducer)
	adm := mustSarama(t, cfg, RoleAdmin)
	checks := []struct {
		name      string
		got, want any
	}{
		{"version", con.Version, sarama.V3_6_0_0},
		{"consumer client id", con.ClientID, "app-consumer"},
		{"admin client id", adm.ClientID, "app-admin"},
		{"auto commit", con.Consumer.Offsets.AutoCommit.Enable, false},
		{"initial offset", con.Consumer.Offsets.Initial, sarama.OffsetOldest},
		{"isolation", con.Consumer.IsolationLevel, sarama.ReadUncommitted},
		{"consumer errors", con.Consumer.Return.Errors, true},
		{"instance id", con.Consumer.Group.InstanceId, cfg.GroupInstanceID},
		{"session timeout", con.Consumer.Group.Session.Timeout, 45 * time.Second},
		{"channel buffer", con.ChannelBufferSize, 1000},
		{"successes", pro.Producer.Return.Successes, true},
		{"errors", pro.Producer.Return.Errors, true},
		{"acks", pro.Producer.RequiredAcks, sarama.WaitForAll},
		{"idempotent", pro.Producer.Idempotent, true},
		{"in flight", pro.Net.MaxOpenRequests, 1},
		{"linger", pro.Producer.Flush.Frequency, 5 * time.Millisecond},
		{"batch", pro.Producer.Flush.Bytes, 262144},
		{"retries bounded by delivery timeout / backoff", pro.Producer.Retry.Max, 1200},
		{"no TLS", pro.Net.TLS.Enable, false},
		{"no SASL", pro.Net.SASL.Enable, false},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestSaramaExactlyOnce(t *testing.T) {
	cfg := loadStreams(t, t.TempDir(), `processing.guarantee = "exactly_once_v2"`)
	con := mustSarama(t, cfg, RoleConsumer)
	pro := mustSarama(t, cfg, RoleProducer)
	if con.Consumer.IsolationLevel != sarama.ReadCommitted {
		t.Error("consumer not read_committed")
	}
	if !pro.Producer.Idempotent || pro.Net.MaxOpenRequests != 1 || pro.Producer.RequiredAcks != sarama.WaitForAll {
		t.Errorf("producer idempotent=%v inflight=%d acks=%v", pro.Producer.Idempotent, pro.Net.MaxOpenRequests, pro.Producer.RequiredAcks)
	}
	if pro.Producer.Flush.Frequency != 0 || pro.Producer.Flush.Bytes != 0 {
		t.Errorf("flush %v/%d: transactional commits must not wait for a flush timer", pro.Producer.Flush.Frequency, pro.Producer.Flush.Bytes)
	}
	if pro.Producer.Transaction.Timeout != 10*time.Second {
		t.Errorf("transaction timeout %v", pro.Producer.Transaction.Timeout)
	}
}

// delivery.timeout.ms, max.block.ms and buffer.memory reach the producer's limits, with
// Java's defaults (delivery.timeout.ms max int under exactly_once_v2, as Kafka Streams).
func TestProducerLimitsFor(t *testing.T) {
	cases := []struct {
		streams string
		want    ProducerLimits
	}{
		{"", DefaultProducerLimits},
		{`processing.guarantee = "exactly_once_v2"`, ProducerLimits{DeliveryTimeout: math.MaxInt32 * time.Millisecond, MaxBlock: time.Minute, BufferMemory: 32 << 20}},
		{"delivery.timeout.ms = 1500\nmax.block.ms = \"2s\"\nproducer.buffer.memory = 1000", ProducerLimits{DeliveryTimeout: 1500 * time.Millisecond, MaxBlock: 2 * time.Second, BufferMemory: 1000}},
	}
	for _, tc := range cases {
		if got := ProducerLimitsFor(loadStreams(t, t.TempDir(), tc.streams)); got != tc.want {
			t.Errorf("%q: limits %+v, want %+v", tc.streams, got, tc.want)
		}
	}
	for _, bad := range []string{"buffer.memory = 0", "max.block.ms = 0", "delivery.timeout.ms = 0"} {
		data := "[agent]\nscripts = [\"p.lua\"]\n[streams]\napplication.id = \"app\"\nbootstrap.servers = \"k:9092\"\n" + bad
		if _, err := config.Parse([]byte(data), t.TempDir(), "agent.toml"); err == nil || !strings.Contains(err.Error(), strings.Fields(bad)[0]) {
			t.Errorf("%s: config error %v, want one naming the key", bad, err)
		}
	}
}

func TestSaramaRejectsUnknownRole(t *testing.T) {
	if _, err := SaramaConfig(config.Default(), Role(9)); err == nil {
		t.Fatal("no error")
	}
}

// pki is a CA with a broker certificate for "broker.test" and a client
// certificate, written as PEM files.
type pki struct {
	dir                        string
	caPool                     *x509.CertPool
	serverCert, clientKeystore tls.Certificate
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	caKey := mustKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		key := mustKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	p := &pki{dir: dir, caPool: x509.NewCertPool()}
	p.caPool.AddCert(ca)
	writePEM(t, filepath.Join(dir, "ca.pem"), pemBlock("CERTIFICATE", caDER))

	srvDER, srvKey := leaf(2, "broker.test", x509.ExtKeyUsageServerAuth)
	p.serverCert = tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}

	cliDER, cliKey := leaf(3, "client", x509.ExtKeyUsageClientAuth)
	keyDER, err := x509.MarshalPKCS8PrivateKey(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "client.pem"), pemBlock("CERTIFICATE", cliDER), pemBlock("PRIVATE KEY", keyDER))
	p.clientKeystore = tls.Certificate{Certificate: [][]byte{cliDER}}
	return p
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writePEM(t *testing.T, path string, blocks ...[]byte) {
	t.Helper()
	var all []byte
	for _, b := range blocks {
		all = append(all, b...)
	}
	if err := os.WriteFile(path, all, 0o600); err != nil {
		t.Fatal(err)
	}
}

// handshake runs a TLS handshake between the client config (dialling
// serverName) and a broker that requires a client certificate from the CA.
func handshake(t *testing.T, p *pki, client *tls.Config, serverName string) error {
	t.Helper()
	// Loopback TCP, not net.Pipe: a failing side writes an alert while the
	// other still writes its flight, which an unbuffered pipe deadlocks on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c2, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c2.Close()
		c2.SetDeadline(time.Now().Add(10 * time.Second))
		done <- tls.Server(c2, &tls.Config{
			Certificates: []tls.Certificate{p.serverCert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    p.caPool,
		}).Handshake()
	}()
	c1, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c1.SetDeadline(time.Now().Add(10 * time.Second))
	cc := client.Clone()
	cc.ServerName = serverName // sarama sets it from the broker address
	cliErr := tls.Client(c1, cc).Handshake()
	if cliErr != nil {
		c1.Close()
	}
	srvErr := <-done
	if cliErr != nil {
		return cliErr
	}
	return srvErr
}

func TestSaramaTLS(t *testing.T) {
	p := newPKI(t)
	cfg := loadStreams(t, p.dir, `security.protocol = "SSL"
ssl.truststore.location = "ca.pem"
ssl.keystore.location = "client.pem"`)
	sc := mustSarama(t, cfg, RoleProducer)
	if !sc.Net.TLS.Enable || sc.Net.TLS.Config == nil {
		t.Fatal("TLS not enabled")
	}
	if len(sc.Net.TLS.Config.Certificates) != 1 {
		t.Fatal("client certificate not loaded")
	}
	if err := handshake(t, p, sc.Net.TLS.Config, "broker.test"); err != nil {
		t.Fatalf("handshake with the right host: %v", err)
	}
	if err := handshake(t, p, sc.Net.TLS.Config, "other.test"); err == nil {
		t.Fatal("handshake succeeded with the wrong host name")
	}

	noHost := mustSarama(t, loadStreams(t, p.dir, `security.protocol = "SSL"
ssl.truststore.location = "ca.pem"
ssl.keystore.location = "client.pem"
ssl.endpoint.identification.algorithm = ""`), RoleProducer)
	if err := handshake(t, p, noHost.Net.TLS.Config, "other.test"); err != nil {
		t.Fatalf("host check disabled, handshake failed: %v", err)
	}

	// A broker certificate from another CA fails even without the host check.
	other := newPKI(t)
	if err := handshake(t, other, noHost.Net.TLS.Config, "broker.test"); err == nil {
		t.Fatal("handshake succeeded with an untrusted broker certificate")
	}
}

func TestSaramaTLSFileErrors(t *testing.T) {
	dir := t.TempDir()
	writePEM(t, filepath.Join(dir, "store.jks"), []byte("\xfe\xed\xfe\xed not pem"))
	_, err := SaramaConfig(loadStreams(t, dir, "security.protocol = \"SSL\"\nssl.truststore.location = \"store.jks\""), RoleConsumer)
	if err == nil || !strings.Contains(err.Error(), "streams.ssl.truststore.location: no PEM certificate") {
		t.Fatalf("got %v", err)
	}

	enc := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1}})
	writePEM(t, filepath.Join(dir, "enc.pem"), enc)
	_, err = SaramaConfig(loadStreams(t, dir, "security.protocol = \"SSL\"\nproducer.ssl.keystore.location = \"enc.pem\""), RoleProducer)
	if err == nil || !strings.Contains(err.Error(), "streams.producer.ssl.keystore.location: not supported yet: encrypted private key") {
		t.Fatalf("got %v", err)
	}

	writePEM(t, filepath.Join(dir, "nokey.pem"), pemBlock("CERTIFICATE", []byte{1}))
	_, err = SaramaConfig(loadStreams(t, dir, "security.protocol = \"SSL\"\nssl.keystore.location = \"nokey.pem\""), RoleAdmin)
	if err == nil || !strings.Contains(err.Error(), "must hold a PEM certificate chain and its unencrypted private key") {
		t.Fatalf("got %v", err)
	}
}

func TestSaramaSASL(t *testing.T) {
	plain := mustSarama(t, loadStreams(t, t.TempDir(), `security.protocol = "SASL_PLAINTEXT"
sasl.mechanism = "PLAIN"
sasl.jaas.config = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="a-secret";'`), RoleConsumer)
	s := plain.Net.SASL
	if !s.Enable || s.Mechanism != sarama.SASLTypePlaintext || s.User != "alice" || s.Password != "a-secret" || !s.Handshake {
		t.Fatalf("PLAIN: %+v", s)
	}
	if plain.Net.TLS.Enable {
		t.Fatal("SASL_PLAINTEXT enabled TLS")
	}

	for mech, want := range map[string]sarama.SASLMechanism{"SCRAM-SHA-256": sarama.SASLTypeSCRAMSHA256, "SCRAM-SHA-512": sarama.SASLTypeSCRAMSHA512} {
		sc := mustSarama(t, loadStreams(t, t.TempDir(), `security.protocol = "SASL_SSL"
sasl.mechanism = "`+mech+`"
sasl.jaas.config = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="b";'`), RoleProducer)
		s := sc.Net.SASL
		if !s.Enable || s.Mechanism != want || s.User != "bob" || s.SCRAMClientGeneratorFunc == nil || !sc.Net.TLS.Enable {
			t.Fatalf("%s: %+v", mech, s)
		}
		size := s.SCRAMClientGeneratorFunc().(*scramClient).hash().Size()
		if (mech == "SCRAM-SHA-256" && size != sha256.Size) || (mech == "SCRAM-SHA-512" && size != sha512.Size) {
			t.Fatalf("%s: hash size %d", mech, size)
		}
	}
}

// TestSCRAMSHA256Vector runs the exchange of RFC 7677 section 3.
func TestSCRAMSHA256Vector(t *testing.T) {
	c := &scramClient{hash: sha256.New, nonce: func() (string, error) { return "rOprNGfwEbeRWgbNEkqO", nil }}
	if err := c.Begin("user", "pencil", ""); err != nil {
		t.Fatal(err)
	}
	first, err := c.Step("")
	if err != nil || first != "n,,n=user,r=rOprNGfwEbeRWgbNEkqO" {
		t.Fatalf("client-first %q %v", first, err)
	}
	final, err := c.Step("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
	want := "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
	if err != nil || final != want {
		t.Fatalf("client-final %q %v\nwant %q", final, err, want)
	}
	if c.Done() {
		t.Fatal("done before the server's signature")
	}
	if _, err := c.Step("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="); err != nil || !c.Done() {
		t.Fatalf("server-final: %v done=%v", err, c.Done())
	}
}

func TestSCRAMRejectsBadServer(t *testing.T) {
	start := func() *scramClient {
		c := &scramClient{hash: sha256.New, nonce: func() (string, error) { return "abc", nil }}
		if err := c.Begin("user", "pencil", "admin,x"); err != nil {
			t.Fatal(err)
		}
		first, err := c.Step("")
		if err != nil || first != "n,a=admin=2Cx,n=user,r=abc" {
			t.Fatalf("client-first %q %v", first, err)
		}
		return c
	}
	for challenge, want := range map[string]string{
		"r=xyz,s=AAAA,i=4096":  "nonce",
		"r=abcd,s=!!,i=4096":   "bad salt",
		"r=abcd,s=AAAA,i=zero": "bad iteration count",
		"e=unknown-user":       "server error: unknown-user",
	} {
		if _, err := start().Step(challenge); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", challenge, err, want)
		}
	}
	c := start()
	if _, err := c.Step("r=abcd,s=AAAA,i=4096"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Step("v=AAAA"); err == nil || c.Done() {
		t.Fatal("accepted a wrong server signature")
	}
}
