package kafkaio

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/agent/config"
)

// Role is the Kafka client a sarama config is built for.
type Role int

const (
	RoleConsumer Role = iota
	RoleProducer
	RoleAdmin
)

func (r Role) String() string {
	switch r {
	case RoleConsumer:
		return "consumer"
	case RoleProducer:
		return "producer"
	case RoleAdmin:
		return "admin"
	}
	return "Role(" + strconv.Itoa(int(r)) + ")"
}

func (r Role) clientRole() (config.Role, error) {
	switch r {
	case RoleConsumer:
		return config.ForConsumer, nil
	case RoleProducer:
		return config.ForProducer, nil
	case RoleAdmin:
		return config.ForAdmin, nil
	}
	return 0, fmt.Errorf("unknown client role %d", int(r))
}

// Config is one client's config, as SaramaConfig builds it: the agent holds it and hands
// it back to this package, and so needs no import of sarama.
type Config = sarama.Config

// SaramaConfig builds the sarama config of one client from the client
// properties: the unprefixed keys, overridden by the role's prefix, as in Kafka
// Streams. The producer's partitioner and transactional id are the caller's.
func SaramaConfig(c *config.Config, role Role) (*sarama.Config, error) {
	cr, err := role.clientRole()
	if err != nil {
		return nil, err
	}
	cl := c.Client(cr)
	sc := sarama.NewConfig()
	sc.Version = sarama.V3_6_0_0
	sc.ClientID = clientID(c, cl, role)
	sc.RackID = config.ClientRack.Get(cl)
	sc.Net.ReadTimeout = config.RequestTimeout.Get(cl)
	sc.Net.DialTimeout = config.SocketConnectionSetupTimeout.Get(cl)
	sc.Metadata.RefreshFrequency = config.MetadataMaxAge.Get(cl)
	backoff := config.RetryBackoff.Get(cl)
	sc.Metadata.Retry.Backoff = backoff
	sc.Admin.Retry.Backoff = backoff
	sc.Consumer.Retry.Backoff = backoff
	sc.Producer.Retry.Backoff = backoff
	sc.Producer.Transaction.Retry.Backoff = backoff
	if err := applySecurity(sc, cl); err != nil {
		return nil, err
	}
	switch role {
	case RoleConsumer:
		applyConsumer(sc, c, cl)
	case RoleProducer:
		applyProducer(sc, c, cl)
	case RoleAdmin:
		sc.Admin.Timeout = config.RequestTimeout.Get(cl)
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("%s client config: %w", role, err)
	}
	return sc, nil
}

// clientID follows Kafka Streams: a client's own prefixed client.id is used as
// is; otherwise the base id (client.id, else application.id) gets the client's
// suffix.
func clientID(c *config.Config, cl config.Client, role Role) string {
	if config.ClientID.Source(cl) != config.ClientID.FullName() {
		return config.ClientID.Get(cl)
	}
	base := c.ClientID
	if base == "" {
		base = "stoatflow"
	}
	return base + "-" + role.String()
}

func applyConsumer(sc *sarama.Config, c *config.Config, cl config.Client) {
	g := &sc.Consumer.Group
	g.Session.Timeout = config.SessionTimeout.Get(cl)
	g.Heartbeat.Interval = config.HeartbeatInterval.Get(cl)
	g.Rebalance.Timeout = config.MaxPollInterval.Get(cl)
	g.InstanceId = c.GroupInstanceID
	sc.Consumer.Fetch.Min = clampInt32(config.FetchMinBytes.Get(cl))
	sc.Consumer.Fetch.MaxBytes = clampInt32(config.FetchMaxBytes.Get(cl))
	sc.Consumer.Fetch.Default = clampInt32(config.MaxPartitionFetchBytes.Get(cl))
	sc.Consumer.MaxWaitTime = config.FetchMaxWait.Get(cl)
	// The agent commits offsets at its commit barrier (enable.auto.commit is
	// refused), so sarama must not commit behind its back.
	sc.Consumer.Offsets.AutoCommit.Enable = false
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	if config.AutoOffsetReset.Get(cl) == "latest" {
		sc.Consumer.Offsets.Initial = sarama.OffsetNewest
	}
	sc.Consumer.IsolationLevel = sarama.ReadUncommitted
	if config.IsolationLevel.Get(cl) == "read_committed" {
		sc.Consumer.IsolationLevel = sarama.ReadCommitted
	}
	sc.Consumer.Return.Errors = true
	if c.BufferedRecordsPerPartition > 0 {
		sc.ChannelBufferSize = c.BufferedRecordsPerPartition
	}
}

func applyProducer(sc *sarama.Config, c *config.Config, cl config.Client) {
	p := &sc.Producer
	p.Return.Successes = true
	p.Return.Errors = true
	switch config.Acks.Get(cl) {
	case "1":
		p.RequiredAcks = sarama.WaitForLocal
	case "0":
		p.RequiredAcks = sarama.NoResponse
	default:
		p.RequiredAcks = sarama.WaitForAll
	}
	p.Timeout = config.RequestTimeout.Get(cl)
	p.MaxMessageBytes = int(config.MaxRequestSize.Get(cl))
	p.Compression = compressionCodecs[config.CompressionType.Get(cl)]
	p.Transaction.Timeout = config.TransactionTimeout.Get(cl)

	// linger.ms is the age at which a partition's batch is sent, batch.size
	// the size that sends it earlier; without linger.ms a batch is ready at
	// once and batch.size means nothing (Producer reads these settings).
	p.Flush.Frequency = config.Linger.Get(cl)
	if p.Flush.Frequency > 0 {
		p.Flush.Bytes = int(config.BatchSize.Get(cl))
	}

	// Kafka turns idempotence off by itself when acks is not all and the user
	// did not ask for it; the config refuses the contradictory combinations.
	p.Idempotent = c.ExactlyOnce() || (config.EnableIdempotence.Get(cl) && p.RequiredAcks == sarama.WaitForAll)
	sc.Net.MaxOpenRequests = int(config.MaxInFlightRequestsPerConnection.Get(cl))
	if p.Idempotent {
		sc.Net.MaxOpenRequests = 1
	}
	p.Retry.Max = producerRetries(cl)
	if p.Idempotent && p.Retry.Max < 1 {
		p.Retry.Max = 1
	}
}

var compressionCodecs = map[string]sarama.CompressionCodec{
	"none":   sarama.CompressionNone,
	"gzip":   sarama.CompressionGZIP,
	"snappy": sarama.CompressionSnappy,
	"lz4":    sarama.CompressionLZ4,
	"zstd":   sarama.CompressionZSTD,
}

// producerRetries is retries, at most delivery.timeout.ms / retry.backoff.ms: a retry waits
// retry.backoff.ms at least, so kafkaio's producer, whose delivery timeout ends the retries
// in time, never reaches that bound first; sarama's AsyncProducer (the bench's ceiling and
// goka run on it with this config) allocates a retry state per possible retry of every
// partition, which max int retries would make a crash.
func producerRetries(cl config.Client) int {
	retries := config.Retries.Get(cl)
	backoff := max(config.RetryBackoff.Get(cl), time.Millisecond)
	if bound := int64(config.DeliveryTimeout.Get(cl) / backoff); bound < retries {
		retries = bound
	}
	return int(retries)
}

// ProducerLimitsFor reads the producer's delivery.timeout.ms, max.block.ms and
// buffer.memory, which sarama's config has no field for.
func ProducerLimitsFor(c *config.Config) ProducerLimits {
	cl := c.Client(config.ForProducer)
	return ProducerLimits{
		DeliveryTimeout: config.DeliveryTimeout.Get(cl),
		MaxBlock:        config.MaxBlock.Get(cl),
		BufferMemory:    int(config.BufferMemory.Get(cl)),
	}
}

func clampInt32(n int64) int32 {
	return int32(min(max(n, math.MinInt32), math.MaxInt32))
}

// applySecurity maps security.protocol, sasl.* and ssl.* onto sarama.
func applySecurity(sc *sarama.Config, cl config.Client) error {
	proto := config.SecurityProtocol.Get(cl)
	if proto == "SSL" || proto == "SASL_SSL" {
		t, err := tlsConfig(cl)
		if err != nil {
			return err
		}
		sc.Net.TLS.Enable = true
		sc.Net.TLS.Config = t
	}
	if !strings.HasPrefix(proto, "SASL_") {
		return nil
	}
	jaas, err := cl.SASL()
	if err != nil {
		return fmt.Errorf("%s: %w", config.SASLJAASConfig.Source(cl), err)
	}
	sasl := &sc.Net.SASL
	sasl.Enable = true
	sasl.Handshake = true
	sasl.Version = sarama.SASLHandshakeV1
	sasl.User = jaas.Username
	sasl.Password = jaas.Password
	switch mech := config.SASLMechanism.Get(cl); mech {
	case "PLAIN":
		sasl.Mechanism = sarama.SASLTypePlaintext
	case "SCRAM-SHA-256":
		sasl.Mechanism = sarama.SASLTypeSCRAMSHA256
		sasl.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: sha256.New} }
	case "SCRAM-SHA-512":
		sasl.Mechanism = sarama.SASLTypeSCRAMSHA512
		sasl.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &scramClient{hash: sha512.New} }
	default:
		return fmt.Errorf("%s: not supported yet: sasl.mechanism %s", config.SASLMechanism.Source(cl), mech)
	}
	return nil
}

// tlsConfig reads the PEM truststore and keystore of a client.
func tlsConfig(cl config.Client) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if path := config.SSLTruststoreLocation.Get(cl); path != "" {
		data, err := config.ReadFile(path, config.MaxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", config.SSLTruststoreLocation.Source(cl), path, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("%s: no PEM certificate in %s (JKS and PKCS12 stores are not read: convert them to PEM)", config.SSLTruststoreLocation.Source(cl), path)
		}
		t.RootCAs = pool
	}
	if path := config.SSLKeystoreLocation.Get(cl); path != "" {
		cert, err := loadKeystore(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", config.SSLKeystoreLocation.Source(cl), err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	if config.SSLEndpointIdentificationAlgorithm.Get(cl) == "" {
		// Kafka's "" turns off the host name check only: the chain is still
		// verified, which crypto/tls can only do in a custom verifier.
		roots := t.RootCAs
		t.InsecureSkipVerify = true
		t.VerifyConnection = func(cs tls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, roots)
		}
	}
	return t, nil
}

func verifyChain(certs []*x509.Certificate, roots *x509.CertPool) error {
	if len(certs) == 0 {
		return errors.New("tls: broker sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// loadKeystore reads a PEM file holding a certificate chain and its
// unencrypted private key.
func loadKeystore(path string) (tls.Certificate, error) {
	data, err := config.ReadFile(path, config.MaxPEMBytes)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", path, err)
	}
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] != "" {
			return tls.Certificate{}, fmt.Errorf("not supported yet: encrypted private key in %s (decrypt it, e.g. openssl pkey -in key.pem)", path)
		}
	}
	cert, err := tls.X509KeyPair(data, data)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s must hold a PEM certificate chain and its unencrypted private key: %w", path, err)
	}
	return cert, nil
}

// scramClient is the client side of SCRAM (RFC 5802) for sarama, with the
// hash of SCRAM-SHA-256 or SCRAM-SHA-512.
type scramClient struct {
	hash  func() hash.Hash
	nonce func() (string, error) // tests fix it; nil = random

	user, password, authzID string
	step                    int
	clientFirstBare         string
	clientNonce             string
	serverSignature         []byte
	done                    bool
}

func (s *scramClient) Begin(user, password, authzID string) error {
	s.user, s.password, s.authzID = user, password, authzID
	s.step, s.done = 0, false
	return nil
}

func (s *scramClient) Done() bool { return s.done }

func (s *scramClient) Step(challenge string) (string, error) {
	s.step++
	switch s.step {
	case 1:
		return s.clientFirst()
	case 2:
		return s.clientFinal(challenge)
	case 3:
		return "", s.verifyServer(challenge)
	}
	return "", errors.New("scram: conversation already finished")
}

func (s *scramClient) gs2Header() string {
	if s.authzID == "" {
		return "n,,"
	}
	return "n,a=" + saslName(s.authzID) + ","
}

// saslName escapes '=' and ',' in a user name (RFC 5802 section 5.1).
func saslName(n string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(n)
}

func (s *scramClient) clientFirst() (string, error) {
	newNonce := s.nonce
	if newNonce == nil {
		newNonce = randomNonce
	}
	n, err := newNonce()
	if err != nil {
		return "", err
	}
	s.clientNonce = n
	s.clientFirstBare = "n=" + saslName(s.user) + ",r=" + n
	return s.gs2Header() + s.clientFirstBare, nil
}

func randomNonce() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawStdEncoding.EncodeToString(b), nil
}

func scramAttrs(msg string) map[byte]string {
	attrs := map[byte]string{}
	for _, part := range strings.Split(msg, ",") {
		if len(part) >= 2 && part[1] == '=' {
			attrs[part[0]] = part[2:]
		}
	}
	return attrs
}

func (s *scramClient) clientFinal(serverFirst string) (string, error) {
	attrs := scramAttrs(serverFirst)
	if e, ok := attrs['e']; ok {
		return "", fmt.Errorf("scram: server error: %s", e)
	}
	nonce, salt64, iter64 := attrs['r'], attrs['s'], attrs['i']
	if !strings.HasPrefix(nonce, s.clientNonce) || len(nonce) == len(s.clientNonce) {
		return "", errors.New("scram: server nonce does not extend the client nonce")
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil {
		return "", fmt.Errorf("scram: bad salt: %w", err)
	}
	iter, err := strconv.Atoi(iter64)
	if err != nil || iter < 1 {
		return "", fmt.Errorf("scram: bad iteration count %q", iter64)
	}
	salted, err := pbkdf2.Key(s.hash, s.password, salt, iter, s.hash().Size())
	if err != nil {
		return "", fmt.Errorf("scram: %w", err)
	}
	clientKey := s.hmac(salted, "Client Key")
	h := s.hash()
	h.Write(clientKey)
	storedKey := h.Sum(nil)
	withoutProof := "c=" + base64.StdEncoding.EncodeToString([]byte(s.gs2Header())) + ",r=" + nonce
	authMessage := s.clientFirstBare + "," + serverFirst + "," + withoutProof
	proof := s.hmac(storedKey, authMessage)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	s.serverSignature = s.hmac(s.hmac(salted, "Server Key"), authMessage)
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof), nil
}

func (s *scramClient) verifyServer(serverFinal string) error {
	attrs := scramAttrs(serverFinal)
	if e, ok := attrs['e']; ok {
		return fmt.Errorf("scram: server error: %s", e)
	}
	got, err := base64.StdEncoding.DecodeString(attrs['v'])
	if err != nil || !hmac.Equal(got, s.serverSignature) {
		return errors.New("scram: the server's signature does not match: it does not know the password")
	}
	s.done = true
	return nil
}

func (s *scramClient) hmac(key []byte, msg string) []byte {
	m := hmac.New(s.hash, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}
