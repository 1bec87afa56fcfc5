// Package state holds StoatFlow's state stores: byte-level key-value, timestamped,
// window, session and versioned stores on one goleveldb database per application.
//
// Every write goes to an in-memory epoch buffer (KIP-892 transactional stores) and, for
// logged stores, to a list of changelog records in Kafka Streams' byte formats. Commit
// applies all buffers together with the changelog offsets (KIP-1035) in one atomic LevelDB
// batch; Abort drops them. Reads choose an isolation level: READ_UNCOMMITTED merges the
// buffer over LevelDB, READ_COMMITTED sees LevelDB only.
//
// Several goroutines (the agent's workers) may write at once, each through a Writer of its
// own and each to the store partitions of its own tasks; Commit, Abort, Restore and Wipe
// belong to one goroutine and run while no Writer writes. Reads through views are safe
// from any goroutine. docs/state.md describes the layout, the formats and what is atomic.
package state
