//go:build iterpoison

package pipeline

// poisonIterators: see memCursor. `make test` runs the store and engine tests once more
// with this tag.
const poisonIterators = true
