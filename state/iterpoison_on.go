//go:build iterpoison

package state

// poisonIterators: see mergeIter.handOut. `make test` runs the store and engine tests once
// more with this tag.
const poisonIterators = true
