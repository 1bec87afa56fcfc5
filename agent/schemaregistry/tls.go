package schemaregistry

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"

	"github.com/stoatflow/stoatflow/agent/config"
)

// TLSConfig reads the PEM truststore (CA certificates; "" = the system roots) and keystore
// (a certificate chain and its unencrypted key in one file; "" = none) of the registry.
func TLSConfig(trustStore, keyStore string) (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if trustStore != "" {
		data, err := config.ReadFile(trustStore, config.MaxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("schema.registry.ssl.truststore.location: %s: %w", trustStore, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("schema.registry.ssl.truststore.location: no PEM certificate in %s (JKS and PKCS12 stores are not read: convert them to PEM)", trustStore)
		}
		t.RootCAs = pool
	}
	if keyStore != "" {
		data, err := config.ReadFile(keyStore, config.MaxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("schema.registry.ssl.keystore.location: %s: %w", keyStore, err)
		}
		cert, err := tls.X509KeyPair(data, data)
		if err != nil {
			return nil, fmt.Errorf("schema.registry.ssl.keystore.location: %s: %w", keyStore, err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}
