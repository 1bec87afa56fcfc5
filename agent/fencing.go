package agent

import (
	"errors"
	"fmt"
)

// rejoin handles a fenced producer the way Kafka Streams handles the TaskMigratedException
// it raises then. A producer is fenced when its transaction outlived transaction.timeout.ms
// (the agent was paused, e.g. SIGSTOP, or starved), and the coordinator aborted it and
// bumped the epoch, or when another producer with the same transactional id started.
// Nothing of the fenced transaction can commit any more, so the epoch is dropped (its store
// writes with it: LevelDB holds exactly the committed epochs) and the loop rejoins the group
// from the committed offsets (loop.retry). The producer is renewed only at the next
// transaction, once the rejoin gave the partitions back: if another agent with the same
// group.instance.id took the application over, the rejoin is refused (Consumer.Replaced)
// and this agent stops without fencing that agent's producer. dropped says the epoch was
// dropped already.
func (e *epoch) rejoin(cause error, dropped bool) error {
	e.log.Warn("the producer was fenced (its transaction outlived transaction.timeout.ms, or another producer "+
		"with its transactional id started); dropping the epoch and rejoining the group from the committed offsets",
		"err", cause)
	if !dropped {
		e.inTxn = false // the coordinator aborted it, or the renewed producer's init will
		if err := e.abort(); err != nil {
			return errors.Join(cause, err)
		}
	}
	e.renewProducer = true
	return nil
}

// renewFencedProducer renews the producer before the first transaction after a fencing.
func (e *epoch) renewFencedProducer() error {
	if !e.renewProducer {
		return nil
	}
	if err := e.k.producer.Renew(); err != nil {
		return err
	}
	e.renewProducer = false
	e.log.Info("producer renewed after fencing; processing resumes from the committed offsets")
	return nil
}

// takenOver stops the application because another member joined the group with this
// agent's group.instance.id: another live agent runs the application now. Rejoining would
// take it back and stop that agent in turn, so this one stops cleanly (exit status 0, so
// that Restart=on-failure does not start it again to fight over the application).
func (l *loop) takenOver() error {
	err := l.k.consumer.ReplacedErr()
	l.a.log.Error("another agent took the application over; stopping this one without committing "+
		"(two live agents must not share a group.instance.id)", "group.instance.id", l.a.cfg.GroupInstanceID, "err", err)
	l.a.state.SetReason(fmt.Sprintf("another agent with group.instance.id %q took the application over", l.a.cfg.GroupInstanceID))
	l.epoch.abortAfterFailure()
	return nil
}
