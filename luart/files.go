package luart

import (
	"maps"
	"slices"
)

// Files lists the display names of the files compiled so far (the scripts and the modules
// they required), sorted: the values OnError may be called with, besides "<lua>". The agent
// starts its Lua error counter of each at zero, so the counter exists before the first
// error and a rate over it sees that error.
func (rt *Runtime) Files() []string { return slices.Sorted(maps.Keys(rt.files)) }
