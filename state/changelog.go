package state

import "github.com/stoatflow/stoatflow/pipeline"

// ChangelogRecord is one write of a logged store in Kafka Streams' changelog format:
// the record for topic <application.id>-<Store>-changelog, partition Partition.
type ChangelogRecord struct {
	Store     string
	Partition int32
	Key       []byte
	Value     []byte // nil = tombstone
	Timestamp int64
	// Headers are the stored headers of headers-aware stores, sent as record headers so a
	// restore can rebuild them; nil for other stores.
	Headers pipeline.Headers
}

// ChangelogPartition names a changelog topic partition by its store.
type ChangelogPartition struct {
	Store     string
	Partition int32
}

// Changelog returns the changelog records of the current epoch, each writer's in write
// order. Repeated writes of a key are all there. The slice is valid until the next Commit
// or Abort. Only the goroutine that commits calls it, while no writer writes.
func (db *DB) Changelog() []ChangelogRecord {
	ws := db.epochWriters()
	if len(ws) == 1 {
		return ws[0].changelog
	}
	var out []ChangelogRecord
	for _, w := range ws {
		out = append(out, w.changelog...)
	}
	return out
}

// TakeChangelog is Writer.TakeChangelog of every writer: each writer's records in write
// order. Only the goroutine that commits calls it, while no writer writes.
func (db *DB) TakeChangelog() []ChangelogRecord {
	ws := db.epochWriters()
	if len(ws) == 1 {
		return ws[0].TakeChangelog()
	}
	var out []ChangelogRecord
	for _, w := range ws {
		out = append(out, w.TakeChangelog()...)
	}
	return out
}

// changelogChunk is the size of the blocks changelog keys and values are copied into.
const changelogChunk = 64 << 10

// Changelog key suffixes: what a window and a session store's changelog key adds to the
// record key (formats in format.go).
const (
	windowChangelogSuffix  = 8 + 4 // start, seq
	sessionChangelogSuffix = 8 + 8 // end, start
)

// refuseChange says why a write of a logged store must not happen: its changelog record
// (the key with keySuffix bytes more, the value, the headers) could never be sent
// (Options.CheckChange). A value nil is a tombstone.
func (p *partition) refuseChange(key []byte, keySuffix int, value []byte, headers pipeline.Headers) error {
	if !p.spec.Logged || p.db.checkChange == nil {
		return nil
	}
	if err := p.db.checkChange(len(key)+keySuffix, len(value), headers); err != nil {
		return p.errorf("a write of a %d-byte key and a %d-byte value is refused, its changelog record could never be sent: %w", len(key), len(value), err)
	}
	return nil
}

// logChange records a write of a logged store, one of w's. Key and value are copied
// because callers reuse their buffers.
func (p *partition) logChange(w *Writer, key, value []byte, ts int64, headers pipeline.Headers) {
	if !p.spec.Logged {
		return
	}
	kv := w.changelogBytes(len(key) + len(value))
	copy(kv, key)
	copy(kv[len(key):], value)
	rec := ChangelogRecord{Store: p.spec.Name, Partition: p.num, Key: kv[:len(key):len(key)], Timestamp: ts}
	if value != nil {
		rec.Value = kv[len(key):]
	}
	switch {
	case value != nil && p.spec.ChangelogVersion != 0:
		rec.Headers = versionHeaders[p.spec.ChangelogVersion]
	case len(headers) > 0:
		rec.Headers = cloneHeaders(headers)
	}
	w.changelog = append(w.changelog, rec)
}

// versionHeaders are the changelog headers of each StoreSpec.ChangelogVersion, shared by
// every record (nothing downstream changes a record's headers).
var versionHeaders = func() [256]pipeline.Headers {
	var hs [256]pipeline.Headers
	for v := range hs {
		hs[v] = pipeline.Headers{{Key: "v", Value: []byte{byte(v)}}}
	}
	return hs
}()

// changelogBytes returns n bytes for a changelog record's key and value. They are cut from
// a block that is only ever appended to, one allocation for many records: the producer
// may still hold the records' slices after the epoch ends, so no byte is used twice.
func (w *Writer) changelogBytes(n int) []byte {
	if cap(w.changelogData)-len(w.changelogData) < n {
		w.changelogData = make([]byte, 0, max(n, changelogChunk))
	}
	end := len(w.changelogData) + n
	b := w.changelogData[len(w.changelogData):end:end]
	w.changelogData = w.changelogData[:end]
	return b
}

func cloneHeaders(h pipeline.Headers) pipeline.Headers {
	out := make(pipeline.Headers, len(h))
	for i, x := range h {
		out[i] = pipeline.Header{Key: x.Key}
		if x.Value != nil {
			out[i].Value = append([]byte{}, x.Value...)
		}
	}
	return out
}
