package kafkatest

import (
	"fmt"
	"testing"
)

// EachTransactionVersion runs body on the single-node cluster formatted with
// transaction.version 2 (Kafka 4.4's default) and on the one formatted with 1, in parallel
// subtests named tv2 and tv1: a transactional test runs on both protocols (KIP-890).
func EachTransactionVersion(t *testing.T, body func(t *testing.T, o Options)) {
	for _, tv := range []int{2, 1} {
		t.Run(fmt.Sprintf("tv%d", tv), func(t *testing.T) {
			t.Parallel()
			body(t, Options{TransactionVersion: tv})
		})
	}
}
