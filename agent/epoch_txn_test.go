//go:build !race

// These drive sarama's transactional producer through its error paths, where sarama has a
// known data race (IBM/sarama#2913, see faults_test.go): they run in make test's pass
// without the race detector.

package agent

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkOnlyCommitted checks that the first read_committed output is key: what the dropped
// epoch sent before it was aborted.
func (r *epochRig) checkOnlyCommitted(t *testing.T, key string) {
	t.Helper()
	if got := readCommitted(t, r.brokers, "out", 1); string(got[0].Key) != key {
		t.Fatalf("the first committed output is %q, want %q: the dropped epoch's output was committed", got[0].Key, key)
	}
}

// A fenced producer drops the epoch (its store writes too) and asks for a rejoin; the next
// transaction starts on a renewed producer and commits.
func TestFaultEpochFencedProducerRejoinsOnARenewedProducer(t *testing.T) {
	r := newEpochRig(t, eosRig)
	r.process(t, 4, "a")
	fenceWithProducer(t, r.cfg)
	// The commit fails with ErrFenced, or with the error a broker answered the epoch's
	// record with (INVALID_TXN_STATE), and then the abort learns of the fencing.
	_, cause := r.epoch.commit(time.Now(), true)
	if cause == nil {
		t.Fatal("the fenced producer committed")
	}
	rejoined, err := r.epoch.fail(cause)
	if err != nil || !rejoined {
		t.Fatalf("fail = %v, %v; want a rejoin", rejoined, err)
	}
	if !r.epoch.renewProducer || r.epoch.open() {
		t.Fatalf("renew %v, open %v; want the producer to renew and the epoch dropped", r.epoch.renewProducer, r.epoch.open())
	}
	if got := r.stored(t, "a"); got != "" {
		t.Fatalf("store holds %q after a fenced epoch", got)
	}
	r.process(t, 4, "b")
	if r.epoch.renewProducer {
		t.Fatal("the next transaction did not renew the producer")
	}
	if committed, err := r.epoch.commit(time.Now(), true); err != nil || !committed {
		t.Fatalf("commit on the renewed producer = %v, %v", committed, err)
	}
	if got := r.committedOffset(t); got != 5 {
		t.Fatalf("committed offset %d, want 5", got)
	}
	r.checkOnlyCommitted(t, "b")
}

// A record the broker did not take in the transaction (a leader change) fails the commit;
// the transaction is aborted, nothing of the epoch is committed or applied, and the next
// epoch commits on the same producer.
func TestFaultEpochRetriableErrorInTheTransactionAbortsIt(t *testing.T) {
	r := newEpochRig(t, eosRig+"enable.transactional.statestores = true\n")
	f := r.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.NotLeaderForPartition, Count: -1})
	r.process(t, 4, "a")
	_, cause := r.epoch.commit(time.Now(), true)
	f.Remove()
	if cause == nil {
		t.Fatal("the commit succeeded though the output was refused")
	}
	if rejoined, err := r.epoch.fail(cause); err != nil || rejoined {
		t.Fatalf("fail(%v) = %v, %v; want the epoch dropped", cause, rejoined, err)
	}
	if r.epoch.open() || r.restores != 0 {
		t.Fatalf("open %v, restores %d: want the epoch dropped and transactional stores kept", r.epoch.open(), r.restores)
	}
	if got := r.committedOffset(t); got != -1 {
		t.Fatalf("committed offset %d after an aborted transaction, want none", got)
	}
	if got := r.stored(t, "a"); got != "" {
		t.Fatalf("store holds %q after an aborted transaction", got)
	}
	r.process(t, 4, "b")
	if committed, err := r.epoch.commit(time.Now(), true); err != nil || !committed {
		t.Fatalf("commit after the abort = %v, %v", committed, err)
	}
	if got := r.committedOffset(t); got != 5 {
		t.Fatalf("committed offset %d, want 5", got)
	}
	r.checkOnlyCommitted(t, "b")
}
