package console

import (
	"log/slog"
	"sync"
	"time"
)

// RestoreProgress follows the restoration of the state stores from their changelogs, for
// the log, /readyz and the console. Progress is counted in changelog offsets (records and
// transaction markers), which is what the end offsets tell in advance.
type RestoreProgress struct {
	mu        sync.Mutex
	active    bool
	store     string
	partition int32
	total     int64 // offsets to replay
	done      int64 // offsets replayed
	records   int64
	started   time.Time
}

// RestoreStatus is a moment of a restoration.
type RestoreStatus struct {
	Store        string `json:"store"`
	Partition    int32  `json:"partition"`
	Records      int64  `json:"records"`      // restored so far
	Offsets      int64  `json:"offsets"`      // changelog offsets replayed so far
	TotalOffsets int64  `json:"totalOffsets"` // changelog offsets to replay in all
	// RecordsPerSecond is the rate since the restoration began; ETASeconds is the time
	// left at that pace, -1 before anything was replayed.
	RecordsPerSecond float64 `json:"recordsPerSecond"`
	ETASeconds       float64 `json:"etaSeconds"`
}

// Begin starts a restoration of total changelog offsets and logs its progress every
// interval until the returned end is called.
func (p *RestoreProgress) Begin(total int64, log *slog.Logger, every time.Duration) (end func()) {
	p.mu.Lock()
	p.active, p.store, p.partition = true, "", 0
	p.total, p.done, p.records, p.started = total, 0, 0, time.Now()
	p.mu.Unlock()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if s := p.Status(); s != nil {
					log.Info("restoring state stores from their changelogs", "store", s.Store, "partition", s.Partition,
						"records", s.Records, "offsets", s.Offsets, "of", s.TotalOffsets,
						"records/s", int64(s.RecordsPerSecond), "eta", etaText(s.ETASeconds))
				}
			}
		}
	}()
	return func() {
		close(stop)
		<-stopped
		p.mu.Lock()
		p.active = false
		p.mu.Unlock()
	}
}

func etaText(seconds float64) string {
	if seconds < 0 {
		return "unknown"
	}
	return (time.Duration(seconds * float64(time.Second))).Round(time.Second).String()
}

// At says which store partition is being replayed.
func (p *RestoreProgress) At(store string, partition int32) {
	p.mu.Lock()
	p.store, p.partition = store, partition
	p.mu.Unlock()
}

// Advance counts records replayed, spanning offsets changelog offsets.
func (p *RestoreProgress) Advance(records, offsets int64) {
	p.mu.Lock()
	p.records += records
	p.done += offsets
	p.mu.Unlock()
}

// Status is the restoration in progress, nil when none is.
func (p *RestoreProgress) Status() *RestoreStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.active {
		return nil
	}
	s := &RestoreStatus{Store: p.store, Partition: p.partition, Records: p.records, Offsets: p.done, TotalOffsets: p.total, ETASeconds: -1}
	if elapsed := time.Since(p.started).Seconds(); elapsed > 0 {
		s.RecordsPerSecond = float64(p.records) / elapsed
		if p.done > 0 {
			s.ETASeconds = float64(max(p.total-p.done, 0)) * elapsed / float64(p.done)
		}
	}
	return s
}
