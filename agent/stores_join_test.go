package agent

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
	"github.com/stoatflow/stoatflow/state"
)

// The outer-join buffer on LevelDB: entries committed in an earlier epoch are read through
// goleveldb's iterator, which reuses its key and value buffers on every step. Two waiting
// left records share a timestamp (adjacent buffer entries), a right record matches the
// second; when the window closes the first one must come out once, under its own key.
func TestOuterJoinBufferOnLevelDBEmitsUnderTheRightKey(t *testing.T) {
	db, err := state.Open(t.TempDir(), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	str := serdes.String{}
	b := pipeline.NewStreamsBuilder(pipeline.Serdes{Key: str, Value: str})
	left, err := b.Stream([]string{"left"}, pipeline.Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	right, err := b.Stream([]string{"right"}, pipeline.Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	joiner := func(_ pipeline.Record, l, r any) (any, error) { return fmt.Sprintf("%v+%v", l, r), nil }
	j, err := left.JoinStream(right, pipeline.OuterStreamJoin, joiner, pipeline.JoinWindows{Before: 5_000, After: 5_000}, pipeline.StreamJoined{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.To("out", pipeline.Produced{}); err != nil {
		t.Fatal(err)
	}
	d, err := pipeline.NewDriver(b, pipeline.DriverOptions{Stores: NewStoreProvider(db), ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	step := func(topic, key, value string, ts int64, want ...string) {
		t.Helper()
		if err := d.Pipe(topic, []byte(key), []byte(value), ts, nil); err != nil {
			t.Fatal(err)
		}
		if err := db.Commit(nil); err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for {
			r, ok := d.ReadOutput("out")
			if !ok {
				break
			}
			got = append(got, fmt.Sprintf("%s:%s", r.Key, r.Value))
		}
		if want == nil {
			want = []string{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %s %s=%s@%d: got %q, want %q", topic, key, value, ts, got, want)
		}
	}
	step("left", "K2", "l2", 13_000)
	step("left", "K3", "l3", 13_000)
	step("right", "K3", "r3", 13_000, "K3:l3+r3")
	step("left", "K9", "l9", 20_000, "K2:l2+<nil>")
	step("right", "K8", "r8", 40_000, "K9:l9+<nil>")
}
