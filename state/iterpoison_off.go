//go:build !iterpoison

package state

// poisonIterators is off in normal builds: iterators hand out LevelDB's and the buffer's
// own slices, which cost nothing.
const poisonIterators = false
