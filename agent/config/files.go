package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
)

// Caps of the files a config names, and of the config itself: each is read whole, so a
// path naming a device (/dev/zero), a FIFO or a large file by mistake must fail at once with
// a clear error instead of hanging the agent or filling its memory.
const (
	MaxConfigBytes = 1 << 20
	// MaxPEMBytes bounds a PEM file: TLS certificate chains, keys and CA bundles (the
	// system's whole CA bundle is about 200 KiB).
	MaxPEMBytes = 4 << 20
)

// ReadFile reads a file that must be a regular file of at most max bytes. A FIFO, a device
// or a directory is refused without being opened for reading, so none can block or stream.
func ReadFile(path string, max int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	if err := regular(st, max); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	defer f.Close()
	// The file was checked by name; it is checked again once open, in case it was replaced.
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(st, max); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &tooLargeError{fmt.Sprintf("larger than %d bytes", max)}
	}
	return data, nil
}

func regular(st os.FileInfo, max int64) error {
	switch {
	case st.IsDir():
		return errors.New("it is a directory")
	case !st.Mode().IsRegular():
		return fmt.Errorf("not a regular file (%s)", fileKind(st.Mode()))
	case st.Size() > max:
		return &tooLargeError{fmt.Sprintf("%d bytes, larger than %d", st.Size(), max)}
	}
	return nil
}

// ErrTooLarge matches (errors.Is) ReadFile's error for a regular file over its cap, which a
// caller may treat as a corrupt file rather than as a wrong path.
var ErrTooLarge = errors.New("file too large")

type tooLargeError struct{ msg string }

func (e *tooLargeError) Error() string { return e.msg }

func (e *tooLargeError) Is(target error) bool { return target == ErrTooLarge }

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// LoadKeyPair reads the HTTP listener's PEM certificate chain and key (agent.http.tls.cert
// and agent.http.tls.key), each a regular file under MaxPEMBytes.
func LoadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := ReadFile(certFile, MaxPEMBytes)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("TLS certificate %s: %w", certFile, err)
	}
	key, err := ReadFile(keyFile, MaxPEMBytes)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("TLS key %s: %w", keyFile, err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("TLS key pair (agent.http.tls.cert=%s, agent.http.tls.key=%s): %w", certFile, keyFile, err)
	}
	return pair, nil
}
