package serdes

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Integer is Kafka's IntegerSerde: 4 bytes, big-endian two's complement. Deserialize produces
// a Go int32. Serialize accepts what Long accepts, provided the value fits in 32 bits.
type Integer struct{}

// Name returns "integer".
func (Integer) Name() string { return "integer" }

// Canonical implements pipeline.CanonicalSerde.
func (Integer) Canonical() {}

// Serialize encodes value as 4 big-endian bytes.
func (Integer) Serialize(_ string, _ pipeline.Headers, value any) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	i, err := toInt64("integer", value)
	if err != nil {
		return nil, err
	}
	if i < math.MinInt32 || i > math.MaxInt32 {
		return nil, fmt.Errorf("integer serde: cannot serialize %d: outside the 32-bit range", i)
	}
	return binary.BigEndian.AppendUint32(make([]byte, 0, 4), uint32(i)), nil
}

// Deserialize decodes 4 big-endian bytes into an int32.
func (Integer) Deserialize(_ string, _ pipeline.Headers, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	if len(data) != 4 {
		return nil, fmt.Errorf("integer serde: Size of data received by IntegerDeserializer is not 4 (got %d bytes)", len(data))
	}
	return int32(binary.BigEndian.Uint32(data)), nil
}
