package conformance

// Cases are the conformance cases, each the twin of conformance/java's case of that name
// and of conformance/cases/NAME.lua.
var Cases = []*Case{
	{Name: "wordcount", Inputs: []Topic{{Name: "text-lines", Key: keys, Value: words(0.1)}}},
}
