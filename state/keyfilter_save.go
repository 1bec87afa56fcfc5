package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// A clean Close saves the key filter in the file filterFile beside LevelDB's, and then puts
// a random token, also in the file, under filterTokenKey in LevelDB, last and synced. Open
// uses the file only if its token is LevelDB's, and deletes the token (synced) before
// anything else writes: a data write after that Open can never be followed by an Open that
// trusts the file, crash or not. The file stays out of LevelDB so that it takes no table of
// its own: which tables Open reads does not change (the token sits with the other system
// keys).
//
// The file: "SFKF" [filterFormat] [token, 8 bytes] [layers] {[capacity][keys added]
// (uvarints)} [every layer's words, little-endian] [CRC-32C of all that]. filterFormat names
// the hash, the probes and the layout: a file in another format is dropped.
const (
	filterFile      = "KEYFILTER"
	filterMagic     = "SFKF"
	filterFormat    = 1
	filterMaxLayers = 20
)

var (
	filterTokenKey = []byte{tagSys, sysKeyFilter}
	crc32c         = crc32.MakeTable(crc32.Castagnoli)
)

// filterLayerCapacity is the capacity of layer i.
func filterLayerCapacity(i int) uint64 {
	c := uint64(filterFirstKeys)
	for range i {
		c *= filterGrowth
	}
	return c
}

// saveKeyFilter saves f for the next Open of g's database in dir. The database must not be
// written after it: Close calls it last.
func saveKeyFilter(g *ldbGuard, dir string, f *keyFilter) error {
	if f == nil || !f.inUse() {
		return nil
	}
	token := rand.Uint64()
	layers := *f.layers.Load()
	b := append([]byte(filterMagic), filterFormat)
	b = binary.LittleEndian.AppendUint64(b, token)
	b = append(b, byte(len(layers)))
	for _, l := range layers {
		b = binary.AppendUvarint(binary.AppendUvarint(b, uint64(l.capacity)), uint64(l.n))
	}
	for _, l := range layers {
		for _, w := range l.blocks {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32c))
	if err := WriteFileSynced(dir, filterFile, b, 0o644); err != nil {
		return err
	}
	var batch leveldb.Batch
	batch.Put(filterTokenKey, binary.LittleEndian.AppendUint64(nil, token))
	return g.Write(&batch, &opt.WriteOptions{Sync: true})
}

// loadKeyFilter returns the filter the last Close saved for g's database in dir, or nil if
// there is none it can trust, and invalidates what it found (the token first, synced).
func loadKeyFilter(g *ldbGuard, dir string) (*keyFilter, error) {
	token, err := g.Get(filterTokenKey)
	if err != nil && !errors.Is(err, leveldb.ErrNotFound) {
		return nil, err
	}
	path := filepath.Join(dir, filterFile)
	b, ferr := os.ReadFile(path)
	if ferr != nil && !errors.Is(ferr, os.ErrNotExist) {
		return nil, fmt.Errorf("read the saved key filter: %w", ferr)
	}
	var f *keyFilter
	if err == nil && ferr == nil {
		f = decodeKeyFilter(b, token)
	}
	if err == nil {
		var batch leveldb.Batch
		batch.Delete(filterTokenKey)
		if err := g.Write(&batch, &opt.WriteOptions{Sync: true}); err != nil {
			return nil, err
		}
	}
	if ferr == nil {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove the saved key filter: %w", err)
		}
	}
	return f, nil
}

// decodeKeyFilter decodes a saved filter whose token must be token; nil when it is not one
// saveKeyFilter wrote with that token.
func decodeKeyFilter(b, token []byte) *keyFilter {
	const head = len(filterMagic) + 1 + 8 + 1
	if len(b) < head+4 || len(token) != 8 || string(b[:len(filterMagic)]) != filterMagic ||
		b[len(filterMagic)] != filterFormat || string(b[len(filterMagic)+1:head-1]) != string(token) ||
		binary.LittleEndian.Uint32(b[len(b)-4:]) != crc32.Checksum(b[:len(b)-4], crc32c) {
		return nil
	}
	n := int(b[head-1])
	if n == 0 || n > filterMaxLayers {
		return nil
	}
	b = b[head : len(b)-4]
	layers := make([]*filterLayer, n)
	words := 0
	for i := range layers {
		capacity, n1 := binary.Uvarint(b)
		if n1 <= 0 {
			return nil
		}
		added, n2 := binary.Uvarint(b[n1:])
		// Every layer but the newest is full: add opens one only then.
		if n2 <= 0 || capacity != filterLayerCapacity(i) || added > capacity || (i < n-1 && added != capacity) {
			return nil
		}
		b = b[n1+n2:]
		layers[i] = &filterLayer{capacity: int(capacity), n: int(added)}
		words += filterWords(int(capacity))
	}
	if len(b) != 8*words {
		return nil
	}
	for _, l := range layers {
		l.blocks = make([]uint64, filterWords(l.capacity))
		for i := range l.blocks {
			l.blocks[i] = binary.LittleEndian.Uint64(b[8*i:])
		}
		b = b[8*len(l.blocks):]
	}
	f := &keyFilter{ready: true}
	f.layers.Store(&layers)
	return f
}
