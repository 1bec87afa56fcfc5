package luart

import (
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

type sjInput struct {
	topic, key, value string
	ts                int64
}

func pipeSJ(t *testing.T, d *pipeline.Driver, inputs ...sjInput) []string {
	t.Helper()
	for _, in := range inputs {
		if err := d.Pipe(in.topic, []byte(in.key), []byte(in.value), in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := readSessions(d, "out", asText)
	if got == nil {
		got = []string{}
	}
	return got
}

// The reference's left-join vector through the DSL; the record context comes last.
func TestStreamLeftJoinDSL(t *testing.T) {
	d := storeDriver(t, prelude+`
local right = b:stream("right")
b:stream("left"):leftJoin(right, function(k, lv, rv, r) return lv .. "+" .. tostring(rv) .. "/" .. tostring(r.topic) end,
  s.JoinWindows.ofTimeDifferenceAndGrace("100ms", 0)):to("out")
return b`)
	expectLines(t, pipeSJ(t, d, sjInput{"left", "0", "A0", 1}, sjInput{"left", "1", "A1", 2}, sjInput{"left", "0", "A0-0", 3}), []string{})
	expectLines(t, pipeSJ(t, d, sjInput{"right", "1", "a1", 3}), []string{"1 A1+a1/right @3"})
	expectLines(t, pipeSJ(t, d, sjInput{"left", "2", "dummy", 401}), []string{"0 A0+nil/ @1", "0 A0-0+nil/ @3"})
	expectLines(t, pipeSJ(t, d, sjInput{"right", "2", "dummy", 401}), []string{"2 dummy+dummy/right @401"})
}

// :before/:after make the window asymmetric; a 3-parameter joiner gets the key.
func TestStreamJoinDSLBoundsAndKey(t *testing.T) {
	d := storeDriver(t, prelude+`
local right = b:stream("right")
b:stream("left"):join(right, function(k, lv, rv) return k .. ":" .. lv .. "+" .. rv end,
  s.JoinWindows.ofTimeDifferenceWithNoGrace(0):before(10):after("5ms")):to("out")
return b`)
	expectLines(t, pipeSJ(t, d, sjInput{"left", "k", "L", 100}), []string{})
	expectLines(t, pipeSJ(t, d, sjInput{"right", "k", "a", 89}, sjInput{"right", "k", "b", 90},
		sjInput{"right", "k", "c", 105}, sjInput{"right", "k", "d", 106}),
		[]string{"k k:L+b @100", "k k:L+c @105"})
}

func TestStreamOuterJoinDSL(t *testing.T) {
	d := storeDriver(t, prelude+`
local right = b:stream("right")
b:stream("left"):outerJoin(right, function(lv, rv) return tostring(lv) .. "+" .. tostring(rv) end,
  s.JoinWindows.ofTimeDifferenceWithNoGrace(10), {name = "oj", storeName = "st"}):to("out")
return b`)
	expectLines(t, pipeSJ(t, d, sjInput{"right", "a", "ra", 5}, sjInput{"left", "b", "lb", 6}), []string{})
	expectLines(t, pipeSJ(t, d, sjInput{"left", "c", "lc", 30}), []string{"a nil+ra @5", "b lb+nil @6"})
}

func TestStreamJoinDSLDescribe(t *testing.T) {
	_, b, err := load(t, prelude+`
b:stream("left"):leftJoin(b:stream("right"), function(lv, rv) return lv end,
  s.JoinWindows.ofTimeDifferenceWithNoGrace(10)):to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := b.Describe().String()
	for _, want := range []string{
		"Processor: KSTREAM-WINDOWED-0000000002 (stores: [KSTREAM-JOINTHIS-0000000004-store])",
		"Processor: KSTREAM-JOINTHIS-0000000004 (stores: [",
		"Processor: KSTREAM-OUTEROTHER-0000000005 (stores: [",
		"KSTREAM-OUTERSHARED-0000000004-store",
		"Processor: KSTREAM-MERGE-0000000006 (stores: [])",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("describe lacks %q:\n%s", want, text)
		}
	}
}

func TestStreamJoinDSLErrors(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{`b:stream("l"):join(b:stream("r"), function(a, c) return a end)`, "needs join windows"},
		{`b:stream("l"):outerJoin(b:table("r"), function(a, c) return a end, s.JoinWindows.ofTimeDifferenceWithNoGrace(1))`, "outerJoin needs a KStream"},
		{`b:stream("l"):join(b:stream("r"), function(a, c) return a end, s.JoinWindows.ofTimeDifferenceWithNoGrace(1), {nme = "x"})`, "nme"},
		{`s.JoinWindows.ofTimeDifferenceWithNoGrace(1):before(-5)`, "must not be negative"},
		{`b:stream("l"):selectKey(function(k, v) return v end):join(b:stream("r"), function(a, c) return a end, s.JoinWindows.ofTimeDifferenceWithNoGrace(1))`, "repartition first"},
	} {
		_, _, err := load(t, prelude+c.script+"\nreturn b", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.script, err, c.want)
		}
	}
}
