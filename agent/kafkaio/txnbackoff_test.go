package kafkaio

import (
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestConcurrentTransactionsAreAskedAgainSoon: after CONCURRENT_TRANSACTIONS (the previous
// transaction's markers still being written) a transaction request asks again after 20 ms,
// as Java's producer does, not after the whole retry.backoff.ms; every other answer waits
// the configured backoff.
func TestConcurrentTransactionsAreAskedAgainSoon(t *testing.T) {
	for _, c := range []struct {
		last    error
		backoff time.Duration
		want    time.Duration
	}{
		{sarama.ErrConcurrentTransactions, 100 * time.Millisecond, 20 * time.Millisecond},
		{sarama.ErrConcurrentTransactions, 5 * time.Millisecond, 5 * time.Millisecond},
		{sarama.ErrNotCoordinatorForConsumer, 100 * time.Millisecond, 100 * time.Millisecond},
		{sarama.ErrOffsetsLoadInProgress, 100 * time.Millisecond, 100 * time.Millisecond},
		{errors.New("connection reset"), 100 * time.Millisecond, 100 * time.Millisecond},
		{nil, 100 * time.Millisecond, 100 * time.Millisecond},
	} {
		if got := txnRetryBackoff(c.last, c.backoff); got != c.want {
			t.Errorf("after %v with retry.backoff.ms %v: wait %v, want %v", c.last, c.backoff, got, c.want)
		}
	}
}
