package luart

import (
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Consumed.withOffsetResetPolicy: s.AutoOffsetReset values or auto.offset.reset's
// spelling, on streams and tables; a source without one leaves it to auto.offset.reset.
func TestOffsetResetOption(t *testing.T) {
	_, b, err := load(t, prelude+`
b:stream("a", {offsetReset = s.AutoOffsetReset.latest()}):to("out")
b:stream({"b1", "b2"}, {offsetReset = s.AutoOffsetReset.byDuration("2h")}):to("out")
b:stream("c", {offsetReset = "none"}):to("out")
b:stream("d", {offsetReset = "by_duration:PT30M"}):to("out")
b:table("e", {offsetReset = s.AutoOffsetReset.earliest()})
b:stream("f"):to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]pipeline.OffsetReset{
		"a":  {Strategy: pipeline.ResetLatest},
		"b1": {Strategy: pipeline.ResetByDuration, Duration: 7_200_000},
		"b2": {Strategy: pipeline.ResetByDuration, Duration: 7_200_000},
		"c":  {Strategy: pipeline.ResetNone},
		"d":  {Strategy: pipeline.ResetByDuration, Duration: 1_800_000},
		"e":  {Strategy: pipeline.ResetEarliest},
		"f":  {},
	} {
		if got := b.OffsetResetOf(topic); got != want {
			t.Errorf("%s: %+v, want %+v", topic, got, want)
		}
	}
	for script, want := range map[string]string{
		`b:stream("a", {offsetReset = "by_duration:1h"})`:                     `offsetReset: invalid value "by_duration:1h"`,
		`b:stream("a", {offsetReset = 5})`:                                    `offsetReset must be s.AutoOffsetReset`,
		`b:stream("a", {offsetReset = s.AutoOffsetReset.byDuration("soon")})`: `to byDuration (invalid duration "soon"`,
	} {
		_, _, err := load(t, prelude+script+"\nreturn b", nil)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ":3:") {
			t.Errorf("%s: %v, want an error at line 3 containing %q", script, err, want)
		}
	}
}
