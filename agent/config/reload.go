package config

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
)

// reloadable are the keys a reload may change: the scripts are judged by the topology
// they build, and the log level is applied on the spot.
var reloadable = []*Key{scripts.key, logLevel.key}

// CheckReload says why a reload cannot replace c, the config the agent runs with, by
// next, the file as it is now: a key other than the reloadable ones changed, as written
// (a value written differently counts as a change). nil when only those changed.
func (c *Config) CheckReload(next *Config) error {
	if key := firstChange(c.written, next.written); key != "" {
		return fmt.Errorf("config key %s changed; a reload may change only the scripts and agent.log.level (restart the agent to apply it)", key)
	}
	return nil
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
