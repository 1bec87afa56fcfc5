package pipeline

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// OffsetReset is Kafka Streams' AutoOffsetReset (KIP-1106): where a partition without a
// committed offset starts. Whoever runs the topology carries it out.
type OffsetReset struct {
	Strategy OffsetResetStrategy
	// Duration (ms, ResetByDuration): start at the first record at most this old.
	Duration int64
}

// OffsetResetStrategy is the kind of an OffsetReset.
type OffsetResetStrategy int

const (
	// ResetDefault: no policy of the source's own; the application's auto.offset.reset.
	ResetDefault OffsetResetStrategy = iota
	ResetEarliest
	ResetLatest
	// ResetNone: fail, naming the topic.
	ResetNone
	ResetByDuration
)

func (s OffsetResetStrategy) String() string {
	switch s {
	case ResetEarliest:
		return "earliest"
	case ResetLatest:
		return "latest"
	case ResetNone:
		return "none"
	case ResetByDuration:
		return "by_duration"
	}
	return "default"
}

// ParseOffsetReset reads an auto.offset.reset value as Kafka's AutoOffsetResetStrategy
// does (KIP-1106): earliest, latest, none, or by_duration:<ISO-8601 duration> such as
// by_duration:PT1H, the duration as java.time.Duration parses it and not negative.
func ParseOffsetReset(s string) (OffsetReset, error) {
	switch s {
	case "earliest":
		return OffsetReset{Strategy: ResetEarliest}, nil
	case "latest":
		return OffsetReset{Strategy: ResetLatest}, nil
	case "none":
		return OffsetReset{Strategy: ResetNone}, nil
	case "by_duration":
		return OffsetReset{}, fmt.Errorf("<:duration> part is missing in by_duration auto offset reset strategy")
	}
	iso, ok := strings.CutPrefix(s, "by_duration:")
	if !ok {
		return OffsetReset{}, fmt.Errorf("invalid value %q: expected earliest, latest, none or by_duration:<ISO-8601 duration> (e.g. by_duration:PT1H)", s)
	}
	ms, err := parseISODuration(iso)
	if err != nil {
		return OffsetReset{}, fmt.Errorf("invalid value %q: %v", s, err)
	}
	if ms < 0 {
		return OffsetReset{}, fmt.Errorf("invalid value %q: negative duration is not supported in by_duration offset reset strategy", s)
	}
	return OffsetReset{Strategy: ResetByDuration, Duration: ms}, nil
}

// isoDuration is java.time.Duration#parse's pattern: PnDTnHnMn.nS, each part signed.
var isoDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseISODuration returns an ISO-8601 duration in milliseconds (fractions of a
// millisecond dropped).
func parseISODuration(s string) (int64, error) {
	m := isoDuration.FindStringSubmatch(s)
	if m == nil || (m[3] == "" && m[2] == "") || strings.EqualFold(m[3], "T") {
		return 0, fmt.Errorf("%q is not an ISO-8601 duration (PnDTnHnMn.nS, e.g. PT1H30M)", s)
	}
	var ms float64
	for _, part := range []struct {
		text string
		unit float64
	}{{m[2], 86_400_000}, {m[4], 3_600_000}, {m[5], 60_000}, {m[6], 1000}} {
		if part.text == "" {
			continue
		}
		n, err := strconv.ParseInt(part.text, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %v", s, err)
		}
		ms += float64(n) * part.unit
	}
	if frac := m[7]; frac != "" {
		f, _ := strconv.ParseFloat("0."+frac, 64)
		if strings.HasPrefix(m[6], "-") {
			f = -f
		}
		ms += f * 1000
	}
	if m[1] == "-" {
		ms = -ms
	}
	if math.Abs(ms) > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is too long", s)
	}
	return int64(ms), nil
}
