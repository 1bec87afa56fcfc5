package luart

import (
	"fmt"
	"io"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// benchScript runs one of the harness's scripts (bench/scripts) over in-memory stores: lines
// of the harness's shape with words from a vocabulary of 1,000, the caches flushed every
// 1,000 records as an epoch commit would. It measures the processing goroutine's work per
// record, without Kafka.
func benchScript(b *testing.B, script string) {
	rt, err := New(Options{Stdout: io.Discard, DefaultKeySerde: "string", DefaultValueSerde: "string"})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	sb, err := rt.LoadScripts([]string{"../bench/scripts/" + script})
	if err != nil {
		b.Fatal(err)
	}
	d, err := pipeline.NewDriver(sb, pipeline.DriverOptions{Stores: pipeline.NewMemoryStores(), ApplicationID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	rt.ChargeNodes(d.Topology().CurrentNode)
	const vocab = 1000
	keys, values := make([][]byte, vocab), make([][]byte, vocab)
	for i := range vocab {
		w := fmt.Sprintf("w%cx%cq", 'a'+rune(i%26), 'a'+rune(i/26))
		keys[i] = []byte(w)
		values[i] = fmt.Appendf(nil, "%s %010d %013d 0123456789-0123456789-0123456789-0123456789-0123456789-01", w, i, 1700000000000+i)
	}
	in := &pipeline.SourceRecord{Topic: "bench-in"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		n := i % vocab
		*in = pipeline.SourceRecord{Topic: "bench-in", Offset: int64(i), Timestamp: 1700000000000 + int64(i), Key: keys[n], Value: values[n]}
		if err := d.Topology().Process(in); err != nil {
			b.Fatal(err)
		}
		if n == vocab-1 {
			if err := d.Topology().FlushCaches(); err != nil {
				b.Fatal(err)
			}
			for d.Pending("bench-out") > 0 {
				d.ReadOutput("bench-out")
			}
		}
	}
}

func BenchmarkScriptWordCount(b *testing.B) { benchScript(b, "wordcount.lua") }

func BenchmarkScriptStateless(b *testing.B) { benchScript(b, "stateless.lua") }
