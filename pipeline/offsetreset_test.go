package pipeline

import "testing"

// auto.offset.reset takes Kafka's AutoOffsetResetStrategy values (KIP-1106), durations as
// java.time.Duration parses them.
func TestParseOffsetReset(t *testing.T) {
	for in, want := range map[string]OffsetReset{
		"earliest":                 {Strategy: ResetEarliest},
		"latest":                   {Strategy: ResetLatest},
		"none":                     {Strategy: ResetNone},
		"by_duration:PT1H":         {Strategy: ResetByDuration, Duration: 3_600_000},
		"by_duration:P1DT2H3M4.5S": {Strategy: ResetByDuration, Duration: 93_784_500},
		"by_duration:pt-1m+90s":    {Strategy: ResetByDuration, Duration: 30_000},
		"by_duration:PT0S":         {Strategy: ResetByDuration},
	} {
		got, err := ParseOffsetReset(in)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"by_duration", "by_duration:", "by_duration:P", "by_duration:PT", "by_duration:P1H", "by_duration:-PT1S", "earliest ", "Latest"} {
		if _, err := ParseOffsetReset(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
