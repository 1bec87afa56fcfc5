package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
)

// reloadable are the keys a reload may change: the scripts are judged by the topology
// they build, the log level is applied on the spot, and the workers are as many as
// num.stream.threads says from the barrier the new topology takes over at.
var reloadable = []*Key{scripts.key, logLevel.key, numStreamThreads.key}

// CheckReload says why a reload cannot replace c, the config the agent runs with, by
// next, the file as it is now: a key other than the reloadable ones changed, as written
// (a value written differently counts as a change). nil when only those changed.
func (c *Config) CheckReload(next *Config) error {
	return refusedReload(firstChange(c.written, next.written))
}

// ReloadDigests are a SHA-256 of the value of every key the file was written with, by full
// name: what a running agent tells `validate --against` (GET /-/reload), so that it can
// say which key changed without the values leaving the agent. A secret key gets the same
// word whatever its value (secretSet): a digest of a password can be tested against guessed
// ones, so of a secret only whether it is set is told; the agent itself compares its value
// when it reloads (CheckReload).
func (c *Config) ReloadDigests() map[string]string {
	out := make(map[string]string, len(c.written))
	for k, v := range c.written {
		if key, _, _, _ := lookup(splitFull(k)); key != nil && key.Secret {
			out[k] = secretSet
			continue
		}
		data, _ := json.Marshal(v) // TOML values: strings, numbers, booleans, lists, times
		sum := sha256.Sum256(data)
		out[k] = hex.EncodeToString(sum[:])
	}
	return out
}

// CheckReloadAgainst is CheckReload for a running agent known only by its ReloadDigests:
// why it could not reload from next.
func (next *Config) CheckReloadAgainst(running map[string]string) error {
	old, cur := map[string]any{}, map[string]any{}
	for k, v := range running {
		old[k] = v
	}
	for k, v := range next.ReloadDigests() {
		cur[k] = v
	}
	return refusedReload(firstChange(old, cur))
}

func refusedReload(key string) error {
	if key == "" {
		return nil
	}
	return fmt.Errorf("config key %s changed; a reload may change only the scripts, agent.log.level and streams.num.stream.threads (restart the agent to apply it)", key)
}

// firstChange names the first key (application.id first, then by name) that is not
// reloadable and whose value differs, or "".
func firstChange(old, new map[string]any) string {
	appID := applicationID.FullName()
	if !reflect.DeepEqual(old[appID], new[appID]) {
		return appID
	}
	var names []string
	for k := range old {
		names = append(names, k)
	}
	for k := range new {
		if _, ok := old[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		if slices.ContainsFunc(reloadable, func(r *Key) bool { return r.full == k }) {
			continue
		}
		ov, inOld := old[k]
		nv, inNew := new[k]
		if inOld != inNew || !reflect.DeepEqual(ov, nv) {
			return k
		}
	}
	return ""
}
