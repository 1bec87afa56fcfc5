package serdes

import (
	"encoding/binary"
	"fmt"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Long is Kafka's LongSerde: 8 bytes, big-endian two's complement. Deserialize produces a Go
// int64. Serialize accepts int64, int, int32, a float64 that is integral and within ±(2^53−1),
// and a decimal string (how the Lua side hands over longs that a Lua number cannot hold).
type Long struct{}

// Name returns "long".
func (Long) Name() string { return "long" }

// Canonical implements pipeline.CanonicalSerde.
func (Long) Canonical() {}

// Serialize encodes value as 8 big-endian bytes.
func (Long) Serialize(_ string, _ pipeline.Headers, value any) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	i, err := toInt64("long", value)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(i)), nil
}

// Deserialize decodes 8 big-endian bytes into an int64; it allocates only the result.
func (Long) Deserialize(_ string, _ pipeline.Headers, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	if len(data) != 8 {
		return nil, fmt.Errorf("long serde: Size of data received by LongDeserializer is not 8 (got %d bytes)", len(data))
	}
	return int64(binary.BigEndian.Uint64(data)), nil
}
