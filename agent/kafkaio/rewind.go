package kafkaio

import "fmt"

// Rewind drops every message fetched and not yet delivered and makes this member resume
// from the group's committed offsets: after an aborted transaction, the records of the
// aborted epoch are read again. It ends the current generation (the session stops and
// the member joins again; a static member gets its partitions back at once), so Revoking
// and then Assigned are called as for any rebalance.
//
// Rewind returns once the old generation has stopped delivering: every message received
// from Messages afterwards belongs to the next generation and starts at a committed
// offset. It does not wait for Revoking or Assigned, so the goroutine that reads
// Messages may call it even when it also serves those callbacks (e.g. through a
// channel). That goroutine:
//   - may call Rewind between batches, and must drop the batches it received before;
//   - must go on serving Revoking and Assigned after Rewind returns: Revoking of the
//     ended generation may come after Rewind returned (or be pending already);
//   - must not commit offsets of the rewound epoch (Commit fails once the generation is
//     gone; inside that Revoking there is nothing left to commit);
//   - must not call Rewind from inside Assigned or Revoking: sarama runs them on its own
//     goroutine, and from Assigned Rewind would wait for a generation that cannot end
//     until Assigned returns.
//
// Between generations, and in a generation whose Assigned has not returned yet, there is
// nothing fetched to drop and Rewind returns at once: the next messages start at the
// committed offsets anyway.
func (c *Consumer) Rewind() error {
	c.mu.Lock()
	g, endSession, closed := c.gen, c.endSession, c.closed
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("rewind consumer group %q: consumer is closed", c.groupID)
	}
	if g == nil || !g.claimsStarted.Load() {
		// A generation none of whose claims started has delivered nothing, and its claims
		// will start at the committed offsets Setup resolved. Its Setup may be blocked in
		// Assigned, which this very goroutine serves: waiting for it to end would wait
		// forever (an epoch failing between the end of one generation and the delivery of
		// the next one's Assigned).
		return nil
	}
	// g is set only inside the Consume call that endSession belongs to (both change
	// under c.mu), so this ends g's session and no other.
	endSession()
	// sarama calls Cleanup after every Setup, and Cleanup closes ended.
	<-g.ended
	return nil
}
