package kafkaio

import (
	"fmt"
	"sync"
	"testing"
)

// Goroutines that send at once, each through its own Lane, put their records in the
// producer's one transaction: run with -race. Each lane's records of a partition keep
// their order.
func TestLanesSendIntoOneTransaction(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "lanes", 2)
	p := newTxnProducer(t, e, "lanes-app")
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	const per = 500
	var wg sync.WaitGroup
	for lane := range 2 {
		wg.Add(1)
		l := p.NewLane()
		go func() {
			defer wg.Done()
			for i := range per {
				if err := l.Send("lanes", int32(lane), []byte("k"), []byte(fmt.Sprint(i)), nil, 1, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := p.CommitTxn(t.Context(), nil, "lanes-app"); err != nil {
		t.Fatal(err)
	}
	for part := range int32(2) {
		values, _ := readValues(t, e, "lanes", part, 0)
		if len(values) != per {
			t.Fatalf("partition %d holds %d records, want %d", part, len(values), per)
		}
		for i, v := range values {
			if want := fmt.Sprintf("%d:%d", i, i); v != want {
				t.Fatalf("partition %d record %d is %s, want %s", part, i, v, want)
			}
		}
	}
}
