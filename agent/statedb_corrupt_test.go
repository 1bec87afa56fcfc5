package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
	"github.com/stoatflow/stoatflow/state/faultdisk"
)

// corruptKeys is how many keys the corruption tests count: enough for the counts to fill
// several of the small tables faultdisk.SplitTables makes.
const corruptKeys = 600

// stateDamage is damage to a state database of each kind goleveldb finds: a data block
// and a table footer, found when a read first reaches the table (its footer when goleveldb
// opens the table, which is also when v1.0.0 panics on it), and the MANIFEST and the
// journal, read only when the database opens.
type stateDamage struct {
	name string
	// split makes the tables hold key ranges of their own (faultdisk.SplitTables): the
	// first holds the format marker, the catalogue and the offsets, which opening and
	// restoring read; the others only counts, first read when a record needs them.
	split  bool
	damage func(dbDir string, tables []string) error
}

var (
	damageBlocks = stateDamage{"data block", true, func(_ string, tables []string) error {
		return eachFile(tables[1:], faultdisk.GarbleBlock)
	}}
	damageFooters = stateDamage{"table footer", true, func(_ string, tables []string) error {
		return eachFile(tables[1:], faultdisk.GarbleFooter)
	}}
	damageManifest = stateDamage{"MANIFEST", false, func(dir string, _ []string) error {
		return garbleEach(dir, "MANIFEST-*")
	}}
	damageJournal = stateDamage{"journal", false, func(dir string, _ []string) error {
		return garbleEach(dir, "*.log")
	}}
)

func eachFile(files []string, f func(string) error) error {
	for _, file := range files {
		if err := f(file); err != nil {
			return err
		}
	}
	return nil
}

func garbleEach(dir, pattern string) error {
	files, err := faultdisk.Files(dir, pattern)
	if err != nil {
		return err
	}
	return eachFile(files, func(f string) error { return faultdisk.Garble(f, 10, 20) })
}

// corruptFixture runs the count topology on b (topics "in" and "out", 2 partitions each)
// over one round of records (each key once) and stops it: the database in dbDir holds
// every count, split into tables when asked.
func corruptFixture(t *testing.T, b *brokerUnderTest, d stateDamage, guarantee string) (cfg *config.Config, dbDir string, tables []string) {
	t.Helper()
	cfg = b.config(t, countScript, fmt.Sprintf("processing.guarantee = %q\n", guarantee))
	dbDir = filepath.Join(cfg.StateDir, cfg.ApplicationID, "db")
	ra := startAgentWith(t, cfg, metrics.New())
	produceRound(t, b, 1)
	readCounts(t, b, 1, readCommittedConfig())
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	if d.split {
		var err error
		if tables, err = faultdisk.SplitTables(dbDir); err != nil {
			t.Fatal(err)
		}
		if len(tables) < 3 {
			t.Fatalf("the counts fill %d tables, want several", len(tables))
		}
	}
	return cfg, dbDir, tables
}

// produceRound produces round n: each key once more.
func produceRound(t *testing.T, b *brokerUnderTest, n int) {
	t.Helper()
	b.produceKeys(t, corruptKeys, corruptKeys, (n-1)*corruptKeys, "v")
}

// countRound produces round n and checks that the read_committed output holds every count
// 1..n of every key exactly once.
func countRound(t *testing.T, b *brokerUnderTest, n int) {
	t.Helper()
	produceRound(t, b, n)
	want := map[string]int64{}
	for i := range corruptKeys {
		want[fmt.Sprintf("k%d", i)] = int64(n)
	}
	b.checkExactCounts(t, want)
}

// readCounts reads the output until every key's count n came out.
func readCounts(t *testing.T, b *brokerUnderTest, n int64, cfg *sarama.Config) {
	t.Helper()
	ch := consumeAll(t, b.brokers, b.topic(t, "out"), cfg)
	done := map[string]bool{}
	deadline := time.After(60 * time.Second)
	for len(done) < corruptKeys {
		select {
		case m := <-ch:
			if int64(binary.BigEndian.Uint64(m.Value)) == n {
				done[string(m.Key)] = true
			}
		case <-deadline:
			t.Fatalf("count %d of %d keys out of %d came out", n, len(done), corruptKeys)
		}
	}
}

func checkStoreCounts(t *testing.T, dbDir string, n int64) {
	t.Helper()
	got := storeCounts(t, dbDir, 2)
	if len(got) != corruptKeys {
		t.Fatalf("the store holds %d keys, want %d", len(got), corruptKeys)
	}
	for k, c := range got {
		if c != n {
			t.Fatalf("the store counts %s %d times, want %d", k, c, n)
		}
	}
}

func checkRebuilds(t *testing.T, m *metrics.Metrics, ra *runningAgent, start, running float64) {
	t.Helper()
	gotStart := testutil.ToFloat64(m.StateRebuilds.WithLabelValues("start"))
	gotRunning := testutil.ToFloat64(m.StateRebuilds.WithLabelValues("running"))
	if gotStart != start || gotRunning != running {
		t.Fatalf("rebuilds at start %v, while running %v; want %v and %v; log:\n%s", gotStart, gotRunning, start, running, ra.out.String())
	}
	if start+running > 0 && testutil.ToFloat64(m.RecordsRestored.WithLabelValues("counts")) < corruptKeys {
		t.Fatal("the rebuilt database was not restored from the changelog")
	}
}

// A state database damaged while the agent was stopped is rebuilt from the changelogs,
// whenever goleveldb finds the damage: at open (a footer of the table opening reads, the
// MANIFEST, the journal) or when processing first reads a damaged table (a data block).
// The agent neither stops nor panics, and every count comes out exactly once.
func TestCorruptStateFoundAtStartIsRebuilt(t *testing.T) {
	corruptStateFoundAtStartIsRebuilt(t, onKfake)
}

func corruptStateFoundAtStartIsRebuilt(t *testing.T, on brokerFor) {
	everyFooter := stateDamage{"every table footer", true, func(_ string, tables []string) error {
		return eachFile(tables, faultdisk.GarbleFooter)
	}}
	for _, c := range []struct {
		d              stateDamage
		start, running float64 // rebuilds expected
	}{
		{damageBlocks, 0, 1},
		{everyFooter, 1, 0},
		{damageFooters, 0, 1},
		{damageManifest, 1, 0},
		{damageJournal, 1, 0},
	} {
		t.Run(c.d.name, func(t *testing.T) {
			b := on(t, 2, "in", "out")
			cfg, dbDir, tables := corruptFixture(t, b, c.d, "exactly_once_v2")
			if err := c.d.damage(dbDir, tables); err != nil {
				t.Fatal(err)
			}
			m := metrics.New()
			ra := startAgentOnDisk(t, cfg, faultdisk.New(dbDir), m)
			countRound(t, b, 2)
			checkRebuilds(t, m, ra, c.start, c.running)
			if err := ra.stop(t); err != nil {
				t.Fatal(err)
			}
			checkStoreCounts(t, dbDir, 2)
		})
	}
}

// Damage to a running agent's state database: a damaged data block or table footer is
// found when processing first reads the table; the agent drops the epoch, rebuilds the
// database and goes on, and every count comes out exactly once. goleveldb reads the
// MANIFEST and the journal only when it opens the database: damage to them changes
// nothing while the agent runs, and the next start rebuilds.
func TestCorruptStateFoundWhileRunningIsRebuilt(t *testing.T) {
	corruptStateFoundWhileRunningIsRebuilt(t, onKfake)
}

func corruptStateFoundWhileRunningIsRebuilt(t *testing.T, on brokerFor) {
	for _, d := range []stateDamage{damageBlocks, damageFooters} {
		t.Run(d.name, func(t *testing.T) {
			b := on(t, 2, "in", "out")
			cfg, dbDir, tables := corruptFixture(t, b, d, "exactly_once_v2")
			m := metrics.New()
			ra := startAgentOnDisk(t, cfg, faultdisk.New(dbDir), m)
			if err := d.damage(dbDir, tables); err != nil {
				t.Fatal(err)
			}
			countRound(t, b, 2)
			checkRebuilds(t, m, ra, 0, 1)
			if err := ra.stop(t); err != nil {
				t.Fatal(err)
			}
			checkStoreCounts(t, dbDir, 2)
		})
	}
	for _, d := range []stateDamage{damageManifest, damageJournal} {
		t.Run(d.name, func(t *testing.T) {
			b := on(t, 2, "in", "out")
			cfg, dbDir, _ := corruptFixture(t, b, d, "exactly_once_v2")
			m := metrics.New()
			ra := startAgentOnDisk(t, cfg, faultdisk.New(dbDir), m)
			countRound(t, b, 2) // the journal holds round 2
			if err := d.damage(dbDir, nil); err != nil {
				t.Fatal(err)
			}
			countRound(t, b, 3)
			checkRebuilds(t, m, ra, 0, 0)
			if err := ra.stop(t); err != nil {
				t.Fatal(err)
			}
			m = metrics.New()
			ra = startAgentOnDisk(t, cfg, faultdisk.New(dbDir), m)
			countRound(t, b, 4)
			checkRebuilds(t, m, ra, 1, 0)
			if err := ra.stop(t); err != nil {
				t.Fatal(err)
			}
			checkStoreCounts(t, dbDir, 4)
		})
	}
}

// Under at-least-once the dropped epoch's records are processed again, as after a crash:
// its outputs may come out twice, but its changelog records were never sent (they go at
// the commit barrier), so the rebuilt store counts every record once.
func TestCorruptStateFoundWhileRunningAtLeastOnce(t *testing.T) {
	corruptStateFoundWhileRunningAtLeastOnce(t, onKfake(t, 2, "in", "out"))
}

func corruptStateFoundWhileRunningAtLeastOnce(t *testing.T, b *brokerUnderTest) {
	cfg, dbDir, tables := corruptFixture(t, b, damageBlocks, "at_least_once")
	m := metrics.New()
	ra := startAgentOnDisk(t, cfg, faultdisk.New(dbDir), m)
	if err := damageBlocks.damage(dbDir, tables); err != nil {
		t.Fatal(err)
	}
	produceRound(t, b, 2)
	readCounts(t, b, 2, saramaTestConfig())
	checkRebuilds(t, m, ra, 0, 1)
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	checkStoreCounts(t, dbDir, 2)
}

// An interactive query can be the first to reach damage, while nothing is processed: the
// query fails, and the agent rebuilds at its next commit barrier even though it is idle.
// Queries answer again from the rebuilt stores, and processing goes on exactly once.
func TestCorruptStateFoundByAQueryIsRebuilt(t *testing.T) {
	corruptStateFoundByAQueryIsRebuilt(t, onKfake(t, 2, "in", "out"))
}

func corruptStateFoundByAQueryIsRebuilt(t *testing.T, b *brokerUnderTest) {
	cfg, dbDir, tables := corruptFixture(t, b, damageBlocks, "exactly_once_v2")
	m := metrics.New()
	ra := startAgentOnDisk(t, cfg, faultdisk.New(dbDir), m)
	addr, err := ra.a.HTTPAddr(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := damageBlocks.damage(dbDir, tables); err != nil {
		t.Fatal(err)
	}
	all := fmt.Sprintf("http://%s/v1/stores/counts/keys?limit=%d", addr, 2*corruptKeys)
	if st, obj := qget(t, all); st == http.StatusOK && obj["error"] == nil {
		t.Fatalf("a range over damaged tables answered %d %v", st, obj)
	}
	waitForAnswer(t, all, func(st int, obj map[string]any) bool {
		items, _ := obj["items"].([]any)
		return st == http.StatusOK && obj["error"] == nil && len(items) == corruptKeys
	})
	checkRebuilds(t, m, ra, 0, 1)
	countRound(t, b, 2)
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	checkStoreCounts(t, dbDir, 2)
}

// In a streams group the agent restores no store as it starts (the group's assignment
// restores those of its tasks), but reads every store partition's changelog offset, as the
// classic mode's restore starts with, so that a database whose offsets are damaged where
// opening it reads nothing is found corrupt at start, and rebuilt, rather than each time
// the agent takes tasks.
func TestStreamsGroupStartFindsCorruptOffsets(t *testing.T) {
	dir := t.TempDir()
	db, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Enough partitions that their offsets fill tables past the first, which opening reads.
	const partitions = 400
	spec := pipeline.StoreSpec{Name: "counts", Type: pipeline.KeyValueStoreType, Logged: true}
	for p := range int32(partitions) {
		if err := db.Restore(spec, p, []state.ChangelogRecord{{Store: spec.Name, Partition: p, Key: []byte("k"), Value: []byte("v")}}, 7); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	tables, err := faultdisk.SplitTables(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := eachFile(tables[1:], faultdisk.GarbleBlock); err != nil {
		t.Fatal(err)
	}
	db, err = state.Open(dir, state.Options{WrapStorage: faultdisk.New(dir).Wrap})
	if err != nil {
		t.Fatalf("the damage is found when the database opens (%v): this test checks the reads after", err)
	}
	defer db.Close()
	err = changelogOffsets(db, []pipeline.StoreSpec{spec}, partitions)
	if !errors.Is(err, state.ErrCorrupt) {
		t.Fatalf("reading the changelog offsets of a damaged database: %v, want state.ErrCorrupt", err)
	}
}
