package kafkaio

import (
	"fmt"
	"testing"

	"github.com/IBM/sarama"
)

func TestProduceErrorRetriable(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{sarama.ErrOutOfBrokers, true},
		{sarama.ErrNotConnected, true},
		{sarama.ErrUnknownTopicOrPartition, true},
		{sarama.ErrMessageSizeTooLarge, false},
		{sarama.ConfigurationError("Attempt to produce message larger than configured Producer.MaxMessageBytes: 2000000 > 1000000"), false},
		{fmt.Errorf("commit: %w", ErrFenced), false},
		{sarama.ErrTopicAuthorizationFailed, false},
	}
	for _, c := range cases {
		if got := (&ProduceError{Topic: "t", Err: c.err}).Retriable(); got != c.want {
			t.Errorf("%v: retriable %v, want %v", c.err, got, c.want)
		}
	}
}
