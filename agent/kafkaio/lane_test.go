package kafkaio

import (
	"context"
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

// BenchmarkLanesSend measures the per-record cost of Send and its acknowledgement with one
// producer shared by 1 and 2 goroutines, each through its own lane, as the agent's
// workers share one (docs/architecture.md says why).
func BenchmarkLanesSend(b *testing.B) {
	e, err := StartEmbedded("127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if err := EnsureTopics(e.Addrs(), testConfig(), map[string]TopicSpec{"bench": {Partitions: 4, ReplicationFactor: 1}}); err != nil {
		b.Fatal(err)
	}
	for _, lanes := range []int{1, 2} {
		b.Run(fmt.Sprintf("lanes=%d", lanes), func(b *testing.B) {
			p, err := NewProducer(e.Addrs(), testConfig())
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			key, value := make([]byte, 16), make([]byte, 100)
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for l := range lanes {
				wg.Add(1)
				lane := p.NewLane()
				go func() {
					defer wg.Done()
					for i := l; i < b.N; i += lanes {
						if err := lane.Send("bench", int32(i%4), key, value, nil, 1, nil); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			if err := p.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
		})
	}
}
