package agent

import (
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

func (p stateStores) SessionStore(spec pipeline.StoreSpec, partition int32) (pipeline.SessionBytesStore, error) {
	ss, err := p.db.SessionStore(spec, partition)
	if err != nil {
		return nil, err
	}
	return sessionStore{ss}, nil
}

type sessionStore struct{ s *state.SessionStore }

// Put writes a session; its changelog record carries ts, the processed record's timestamp.
func (s sessionStore) Put(key []byte, start, end int64, agg []byte, ts int64) (bool, error) {
	return s.s.Put(key, start, end, agg, ts)
}

func (s sessionStore) FindSessions(key []byte, earliestEnd, latestStart int64, backward bool) pipeline.SessionBytesIterator {
	return s.s.FindSessions(key, earliestEnd, latestStart, backward)
}

func (s sessionStore) FindSessionsRange(keyFrom, keyTo []byte, earliestEnd, latestStart int64, backward bool) pipeline.SessionBytesIterator {
	return s.s.FindSessionsRange(keyFrom, keyTo, earliestEnd, latestStart, backward)
}

func (s sessionStore) FetchSession(key []byte, start, end int64) ([]byte, bool, error) {
	v, err := s.s.FetchSession(key, start, end)
	return v, v != nil, err
}
