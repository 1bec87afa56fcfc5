package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

func TestChoosePartition(t *testing.T) {
	cases := []struct {
		name      string
		partition int32
		key       []byte
		want      int32
	}{
		{"requested", 2, []byte("k"), 2},
		{"requested overrides key", 0, []byte("foobar"), 0},
		{"hashed key", -1, []byte("foobar"), pipeline.DefaultPartition([]byte("foobar"), 4)},
	}
	for _, c := range cases {
		got, err := choosePartition(c.partition, c.key, 4)
		if err != nil || got != c.want {
			t.Errorf("%s: partition = %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	if _, err := choosePartition(4, nil, 4); err == nil {
		t.Error("partition 4 of 4: want an error")
	}
	for range 100 {
		got, err := choosePartition(-1, nil, 3)
		if err != nil || got < 0 || got >= 3 {
			t.Fatalf("nil key: partition = %d, %v; want 0..2", got, err)
		}
	}
}
