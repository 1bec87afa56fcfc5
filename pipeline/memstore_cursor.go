package pipeline

// memCursor is a memory store iterator's position in its sorted keys, and what it handed
// out there. The memory stores' own slices stay valid, but package state's iterators hand
// out bytes that are valid only until the next Next or Close (goleveldb reuses them). In
// iterpoison builds memCursor hands out copies and overwrites them at the next step, so
// engine tests on memory stores fail loudly where a kept slice would go wrong on LevelDB.
type memCursor struct {
	pos, n int
	handed [][]byte
}

func newMemCursor(n int) memCursor { return memCursor{pos: -1, n: n} }

func (c *memCursor) Next() bool {
	c.retire()
	c.pos++
	return c.pos < c.n
}

func (c *memCursor) Err() error { return nil }
func (c *memCursor) Close()     { c.retire() }

func (c *memCursor) hand(b []byte) []byte {
	if !poisonIterators || b == nil {
		return b
	}
	cp := append([]byte{}, b...)
	c.handed = append(c.handed, cp)
	return cp
}

func (c *memCursor) handHeaders(h Headers) Headers {
	if !poisonIterators || h == nil {
		return h
	}
	out := make(Headers, len(h))
	for i, x := range h {
		out[i] = Header{Key: x.Key, Value: c.hand(x.Value)}
	}
	return out
}

// retire overwrites what was handed out with a pattern that reads, as a string, as what
// went wrong.
func (c *memCursor) retire() {
	if !poisonIterators {
		return
	}
	const stale = "<stale iterator bytes>"
	for _, b := range c.handed {
		for i := range b {
			b[i] = stale[i%len(stale)]
		}
	}
	clear(c.handed)
	c.handed = c.handed[:0]
}
