package conformance

import "github.com/stoatflow/stoatflow/pipeline"

// Case is one topology written twice (conformance/java's Cases and
// conformance/cases/NAME.lua) and the input it runs on.
type Case struct {
	Name string
	// Inputs are the topics the generator writes to.
	Inputs []Topic
	// Records is the number of input records of a seed (default 40).
	Records int
	// Wall mixes wall-clock advances into the input (wall-clock punctuation).
	Wall bool
	// Fixed is the whole input of a case that does not run on generated input.
	Fixed []Step
	// ProbeKeys are keys read from versioned stores besides the input's keys, and ProbeTimes
	// times they are read as of besides the input's timestamps.
	ProbeKeys  []string
	ProbeTimes []int64
	// Handlers are StoatFlow's exception handlers and dead-letter topic: the twin of the
	// properties the Java case sets (default: LogAndFail, no dead-letter topic).
	Handlers pipeline.ExceptionHandlers
	// Differences are the documented differences (docs/COMPATIBILITY.md) the case shows:
	// each one says how the sides may differ, and the comparison checks just that.
	Differences []Difference
	// Defect names a difference the suite found that is a defect of StoatFlow not fixed
	// yet: the case still runs and its mismatch is logged, not failed; once it passes the
	// test fails until the mark is removed. CONFORMANCE_STRICT=1 fails on it.
	Defect string
}
