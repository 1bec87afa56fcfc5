package serdes

import (
	"bytes"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Bytes is Kafka's ByteArraySerde: the data as is. Deserialize produces a Go []byte (a copy,
// so the value outlives buffers that consumers and store iterators reuse; empty data gives an
// empty, non-nil slice). Serialize accepts a []byte, sent without copying, or a string (Lua
// strings are byte strings).
type Bytes struct{}

// Name returns "bytes".
func (Bytes) Name() string { return "bytes" }

// Canonical implements pipeline.CanonicalSerde.
func (Bytes) Canonical() {}

// Serialize returns value's bytes.
func (Bytes) Serialize(_ string, _ pipeline.Headers, value any) ([]byte, error) {
	switch v := value.(type) {
	case nil:
		return nil, nil
	case []byte:
		return v, nil
	case string:
		return stringBytes(v), nil
	}
	return nil, cannotSerialize("bytes", value)
}

// Deserialize returns a copy of data.
func (Bytes) Deserialize(_ string, _ pipeline.Headers, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	return bytes.Clone(data), nil
}
