package query

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/stoatflow/stoatflow/pipeline"
)

// keyMetadata is KafkaStreams#queryMetadataForKey: the partition the key belongs to, the
// host serving it (on a standby: the active's) and the hosts keeping standby copies of it,
// which answer stale reads (StaleParam). Kafka Streams answers
// KeyQueryMetadata.NOT_AVAILABLE outside RUNNING and REBALANCING (and StoatFlow's STANDBY);
// over HTTP that is a 503.
func (sv *server) keyMetadata(w http.ResponseWriter, r *http.Request) {
	headers, e := metadataParams(r.URL.RawQuery)
	if e == nil {
		e = sv.checkIsolationParam(r.URL.Query())
	}
	var out KeyMetadata
	if e == nil {
		out, e = sv.metadataFor(r.PathValue("store"), r.PathValue("key"), headers)
	}
	if e != nil {
		sv.opts.WriteError(w, e.status, e.code, e.msg)
		return
	}
	sv.opts.WriteJSON(w, http.StatusOK, out)
}

func (sv *server) checkIsolationParam(q url.Values) *apiError {
	_, e := sv.isolation(q.Get("isolation"))
	return e
}

func (sv *server) metadataFor(store, keyText string, headers pipeline.Headers) (KeyMetadata, *apiError) {
	if st := sv.agent.State(); st != stateRunning && st != stateRebalancing && st != stateStandby {
		return KeyMetadata{}, &apiError{http.StatusServiceUnavailable, "not_available", fmt.Sprintf(
			"key metadata is not available in state %s (Kafka Streams returns KeyQueryMetadata.NOT_AVAILABLE outside RUNNING, REBALANCING and, for StoatFlow, STANDBY)", st)}
	}
	host := sv.agent.ActiveHost()
	// A standby answers where the active serves the key.
	if instance, active, standby := sv.agent.Standby(); standby {
		if active == "" {
			return KeyMetadata{}, &apiError{http.StatusServiceUnavailable, "not_available", fmt.Sprintf(
				"this agent is a standby and the active agent %s has no application.server to name", instance)}
		}
		host = active
	}
	s, e := sv.lookupStore(store)
	if e != nil {
		return KeyMetadata{}, e
	}
	key, err := s.key.parse(keyText, headers)
	if err != nil {
		return KeyMetadata{}, badParam("key", "%v", err)
	}
	if s.global {
		// As Kafka Streams answers for a global store: every instance holds all of it.
		return KeyMetadata{ActiveHost: host, StandbyHosts: []string{}, Partition: -1}, nil
	}
	partition := s.keyPartition(key)
	if pd := s.replicas.placed; pd.spread {
		// The agent of the streams group that runs the key's partition, and those keeping
		// standby copies of it (its standby tasks), which answer stale reads.
		if pd.pl == nil {
			return KeyMetadata{}, notPlaced()
		}
		owner := pd.pl.Owner(store, partition)
		if owner == "" {
			return KeyMetadata{}, unowned(store, partition)
		}
		return KeyMetadata{ActiveHost: owner, StandbyHosts: pd.pl.StandbyHosts(store, partition), Partition: partition}, nil
	}
	standbys := sv.agent.StandbyHosts(store, partition)
	if standbys == nil {
		standbys = []string{}
	}
	return KeyMetadata{ActiveHost: host, StandbyHosts: standbys, Partition: partition}, nil
}

// metadataParams reads the headers from the raw query, keeping their order (a url.Values
// map would lose it, and a serialiser may care), and refuses unknown parameters and a
// repeated isolation. A header may repeat, as in a record.
func metadataParams(raw string) (pipeline.Headers, *apiError) {
	var hs pipeline.Headers
	isolations := 0
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			return nil, badParam(k, "not a valid query parameter name: %v", err)
		}
		value, err := url.QueryUnescape(v)
		if err != nil {
			return nil, badParam(name, "not a valid query parameter value: %v", err)
		}
		switch {
		case name == "isolation":
			isolations++
		case strings.HasPrefix(name, HeaderParam) && len(name) > len(HeaderParam):
			hs = append(hs, pipeline.Header{Key: name[len(HeaderParam):], Value: []byte(value)})
		default:
			return nil, badParam(name, "unknown parameter (known: isolation, header.NAME)")
		}
	}
	if isolations > 1 {
		return nil, repeatedParam("isolation", isolations)
	}
	return hs, nil
}
