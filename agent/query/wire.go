package query

import (
	"net/url"
	"strings"
)

// The routes of the interactive queries (DESIGN §7, docs/queries.md), shared by the agent
// that serves them and the CLI that calls them (stoatflow query).
const (
	RouteStores   = "/v1/stores"
	RouteKey      = "/v1/stores/{store}/keys/{key}"
	RouteKeys     = "/v1/stores/{store}/keys"
	RouteCount    = "/v1/stores/{store}/count"
	RouteWindows  = "/v1/stores/{store}/windows/{key}"
	RouteIQv2     = "/v2/query"
	RouteMetadata = "/v1/metadata/{store}/{key}"
	// RouteAllMetadata and RouteStoreMetadata list the agents of the application and the
	// store partitions each holds (metadataForAllStreamsClients, streamsMetadataForStore).
	RouteAllMetadata   = "/v1/metadata"
	RouteStoreMetadata = "/v1/metadata/{store}"
)

// HeaderParam prefixes the parameters of RouteMetadata that carry record headers for the
// key serialiser: ?header.NAME=VALUE (KIP-1321's queryMetadataForKey overloads with Headers).
const HeaderParam = "header."

// StaleParam lets a standby answer a store query from its copy of the stores, which trails
// the active's (Kafka Streams' StoreQueryParameters.enableStaleStores): ?staleStores=true,
// and "staleStores": true in an IQv2 body. The answer gives each standby partition's lag.
const StaleParam = "staleStores"

// PartitionsParam restricts a range or count (RouteKeys, RouteCount) to the listed store
// partitions, ?partitions=1,3, each of which the agent must answer from itself (else 503):
// an agent of a streams group fanning a read out to the agents running the other partitions
// sends it, and an agent answering it never fans out again, so a read is forwarded once at
// most. Each item of a range so restricted also carries its serialised key (RawKey), the
// order the fanning agent merges in.
const PartitionsParam = "partitions"

// Lags are the lags of the standby copies an answer was read from, by store partition.
type Lags map[string]LagInfo

// Path is a route with its {store} and {key} filled in, escaped.
func Path(route, store, key string) string {
	return strings.NewReplacer("{store}", url.PathEscape(store), "{key}", url.PathEscape(key)).Replace(route)
}

// StoreInfo is one store of GET /v1/stores.
type StoreInfo struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	KeySerde   string `json:"keySerde"`
	ValueSerde string `json:"valueSerde"`
	Partitions int32  `json:"partitions"`
	// ApproximateNumUncommittedBytes is what the store's partitions on this agent buffer of
	// the epoch in progress, not yet committed (KIP-892's approximateNumUncommittedBytes;
	// the stoatflow_state_uncommitted_bytes gauge, /v1/status's uncommittedBytes).
	ApproximateNumUncommittedBytes int64 `json:"approximateNumUncommittedBytes"`
}

// KVItem is one key-value entry: the answer of a key read, an item of a range.
type KVItem struct {
	Key       any   `json:"key"`
	Value     any   `json:"value"`
	Timestamp int64 `json:"timestamp"`
	Partition int32 `json:"partition"`
	// Headers is a list of {"key", "value"} or {"key", "valueBase64"}, for headers-aware
	// stores only (an empty list is still written).
	Headers any `json:"headers,omitempty"`
	// Lags, in an answer read from a standby copy, is its partition's lag.
	Lags Lags `json:"lags,omitempty"`
	// RawKey, in a range restricted by PartitionsParam, is the serialised key (base64).
	RawKey []byte `json:"rawKey,omitempty"`
}

// WindowItem is one window (or session) of GET /v1/stores/{store}/windows/{key}.
type WindowItem struct {
	Key         any   `json:"key"`
	WindowStart int64 `json:"windowStart"`
	WindowEnd   int64 `json:"windowEnd"`
	Value       any   `json:"value"`
}

// Page is the answer of a range or window read: its items, then the cursor to continue
// from or the error that stopped the read after the status line was written.
type Page[T any] struct {
	Items []T `json:"items"`
	PageEnd
}

// PageEnd is what follows a page's items. Its fields are in their JSON names' order.
type PageEnd struct {
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
	// Lags, in an answer read from standby copies, are their partitions' lags.
	Lags Lags   `json:"lags,omitempty"`
	Next string `json:"next,omitempty"`
}

// Count is the answer of GET /v1/stores/{store}/count.
type Count struct {
	Count int64 `json:"count"`
	Lags  Lags  `json:"lags,omitempty"`
}

// StreamsMetadata is one agent in the answer of GET /v1/metadata and
// /v1/metadata/{store}: Kafka Streams' StreamsMetadata, with the store partitions the agent
// runs (and keeps standby copies of) by store, where Kafka Streams gives its source topic
// partitions. A global store is held whole by every agent: partition 0.
type StreamsMetadata struct {
	HostInfo               string             `json:"hostInfo"`
	StateStoreNames        []string           `json:"stateStoreNames"`
	StorePartitions        map[string][]int32 `json:"storePartitions"`
	StandbyStateStoreNames []string           `json:"standbyStateStoreNames"`
	StandbyStorePartitions map[string][]int32 `json:"standbyStorePartitions"`
}

// KeyMetadata is the answer of GET /v1/metadata/{store}/{key}: the partition holding the
// key (-1 for a global store), the host serving it and those keeping standby copies of it
// (Kafka Streams' KeyQueryMetadata).
type KeyMetadata struct {
	ActiveHost   string   `json:"activeHost"`
	StandbyHosts []string `json:"standbyHosts"`
	Partition    int32    `json:"partition"`
}
