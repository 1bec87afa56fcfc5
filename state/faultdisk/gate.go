package faultdisk

import (
	"sync"

	"github.com/syndtr/goleveldb/leveldb/storage"
)

// Gate holds a database's journal writes while it is closed (state.Options.WrapStorage =
// Wrap), so a test can look at the database, or at what runs on it, while a commit is being
// written: every LevelDB write goes to the journal first.
type Gate struct {
	mu   sync.Mutex
	open chan struct{} // nil: writes pass
	held chan struct{} // gets a value when a write waits
}

// Wrap puts a database's journal behind the gate.
func (g *Gate) Wrap(s storage.Storage) storage.Storage { return gatedStorage{s, g} }

// Close makes the next journal writes wait until Reopen. Held reports the first of them.
func (g *Gate) Close() {
	g.mu.Lock()
	g.open, g.held = make(chan struct{}), make(chan struct{}, 1)
	g.mu.Unlock()
}

// Held receives a value once a write waits at the closed gate.
func (g *Gate) Held() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

// Reopen lets the held writes go on; a no-op when open.
func (g *Gate) Reopen() {
	g.mu.Lock()
	if g.open != nil {
		close(g.open)
		g.open = nil
	}
	g.mu.Unlock()
}

func (g *Gate) wait() {
	g.mu.Lock()
	open, held := g.open, g.held
	g.mu.Unlock()
	if open == nil {
		return
	}
	select {
	case held <- struct{}{}:
	default:
	}
	<-open
}

type gatedStorage struct {
	storage.Storage
	g *Gate
}

func (s gatedStorage) Create(fd storage.FileDesc) (storage.Writer, error) {
	w, err := s.Storage.Create(fd)
	if err != nil || fd.Type != storage.TypeJournal {
		return w, err
	}
	return gatedWriter{w, s.g}, nil
}

type gatedWriter struct {
	storage.Writer
	g *Gate
}

func (w gatedWriter) Write(p []byte) (int, error) {
	w.g.wait()
	return w.Writer.Write(p)
}
