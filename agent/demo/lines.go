package demo

import (
	"fmt"
	"time"
)

// lines feeds text-lines, read by scripts/wordcount.lua and scripts/shout.lua.
func init() {
	lines := []string{
		"the quick brown fox jumps over the lazy dog",
		"a stoat is a small mustelid that turns white in winter",
		"kafka streams keeps state next to the processing",
		"lua makes pipeline changes quick to write and to review",
		"exactly once means every record counts once",
	}
	register("lines", Feeder{
		Topics: []string{"text-lines"},
		Every:  500 * time.Millisecond,
		Tick: func(i int, _ time.Time) []Record {
			return []Record{{Topic: "text-lines", Key: fmt.Appendf(nil, "line-%d", i), Value: []byte(lines[i%len(lines)])}}
		},
	})
}
