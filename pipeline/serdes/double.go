package serdes

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Double is Kafka's DoubleSerde: 8 bytes, IEEE-754 big-endian. Deserialize produces a Go
// float64. Serialize accepts float64 (NaN and infinities included, as Java does), int64, int
// or int32 when a float64 holds the value exactly, and a json.Number within the double range.
type Double struct{}

// Name returns "double".
func (Double) Name() string { return "double" }

// Serialize encodes value as 8 big-endian IEEE-754 bytes.
func (Double) Serialize(_ string, _ pipeline.Headers, value any) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	f, err := toFloat64("double", value)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), math.Float64bits(f)), nil
}

// Deserialize decodes 8 big-endian IEEE-754 bytes into a float64. The size message is
// Java's DoubleDeserializer's, which says "Deserializer".
func (Double) Deserialize(_ string, _ pipeline.Headers, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	if len(data) != 8 {
		return nil, fmt.Errorf("double serde: Size of data received by Deserializer is not 8 (got %d bytes)", len(data))
	}
	return math.Float64frombits(binary.BigEndian.Uint64(data)), nil
}
