package kafkatest

import (
	"strings"
	"testing"
	"time"
)

// TestLockUseWriterFirst: tests using a shared cluster hold it together; an exclusive one
// waits for them, and a test arriving while it waits comes after it, not before.
func TestLockUseWriterFirst(t *testing.T) {
	dir := t.TempDir()
	const wait = 30 * time.Second
	r1, err := lockUse(dir, "c", false, wait)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := lockUse(dir, "c", false, wait) // shared with r1
	if err != nil {
		t.Fatal(err)
	}

	order := make(chan string, 2)
	release := make(chan struct{})
	go func() {
		unlock, err := lockUse(dir, "c", true, wait)
		if err != nil {
			order <- err.Error()
			return
		}
		order <- "exclusive"
		<-release
		unlock()
	}()
	// The exclusive taker is waiting once it holds the intent lock.
	deadline := time.Now().Add(wait)
	for {
		probe, err := lockFileWithin(dir+"/c.intent", false, time.Millisecond)
		if err != nil {
			break
		}
		probe()
		if time.Now().After(deadline) {
			t.Fatal("the exclusive taker never announced itself")
		}
		time.Sleep(10 * time.Millisecond)
	}
	go func() {
		unlock, err := lockUse(dir, "c", false, wait)
		if err != nil {
			order <- err.Error()
			return
		}
		order <- "late shared"
		unlock()
	}()
	r1()
	r2()
	if got := <-order; got != "exclusive" {
		t.Fatalf("first in after the shared holders left: %s, want the exclusive taker", got)
	}
	close(release)
	if got := <-order; got != "late shared" {
		t.Fatalf("then: %s, want the late shared taker", got)
	}
}

// TestLockUseGivesUp: a taker that cannot have the lock within its wait says so.
func TestLockUseGivesUp(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockUse(dir, "c", false, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	_, err = lockUse(dir, "c", true, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "c.use") {
		t.Fatalf("exclusive while shared: %v, want an error naming c.use", err)
	}
}
