package pipeline

import "fmt"

// storeCodec serialises a store's keys and values with its serdes, using the changelog
// topic as topic name, as Kafka Streams' metered stores do; ops sample its latencies.
type storeCodec struct {
	spec  *StoreSpec
	topic string
	ops   *storeOps
}

// Name is the store's name.
func (c storeCodec) Name() string { return c.spec.Name }

func (c storeCodec) key(k any) ([]byte, error) {
	if k == nil {
		return nil, fmt.Errorf("store %s: null keys are not allowed", c.spec.Name)
	}
	kb, err := c.spec.Serdes.Key.Serialize(c.topic, nil, k)
	if err != nil {
		return nil, fmt.Errorf("store %s: key: %w", c.spec.Name, err)
	}
	return kb, nil
}

// optKey serialises a range bound; nil stays nil (unbounded).
func (c storeCodec) optKey(k any) ([]byte, error) {
	if k == nil {
		return nil, nil
	}
	return c.key(k)
}

func (c storeCodec) keyOf(b []byte) (any, error) {
	k, err := c.spec.Serdes.Key.Deserialize(c.topic, nil, b)
	if err != nil {
		return nil, fmt.Errorf("store %s: key: %w", c.spec.Name, err)
	}
	return k, nil
}

func (c storeCodec) valueBytes(v any) ([]byte, error) {
	b, err := c.spec.Serdes.Value.Serialize(c.topic, nil, v)
	if err != nil {
		return nil, fmt.Errorf("store %s: value: %w", c.spec.Name, err)
	}
	return b, nil
}

func (c storeCodec) value(b []byte) (any, error) {
	v, err := c.spec.Serdes.Value.Deserialize(c.topic, nil, b)
	if err != nil {
		return nil, fmt.Errorf("store %s: value: %w", c.spec.Name, err)
	}
	return v, nil
}
