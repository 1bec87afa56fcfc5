//go:build !iterpoison

package pipeline

// poisonIterators is off in normal builds: the memory stores hand out their own slices.
const poisonIterators = false
