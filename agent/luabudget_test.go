package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent/config"
)

// testConfigWith is testConfig with agentKeys replacing the test agent's Lua budgets.
func testConfigWith(t *testing.T, brokers []string, script, agentKeys, extra string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.lua"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	toml := strings.Replace(agentTOML(brokers, dir, "budget", extra+"commit.interval.ms = 50\n"), `lua.call.timeout = "500ms"`, agentKeys, 1)
	cfg, err := config.Parse([]byte(toml), dir, "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A script whose data grow by 1 MiB with every record runs out of an 8 MiB memory budget: the
// record that would take it past the budget fails the callback, and under LogAndFail the
// agent stops naming it. The Lua data start empty after a restart, so the restarted agent
// processes that record and the rest instead of failing on it again. (Each record is its
// own epoch here, as records of a real leak are spread over many: were the budget filled
// within one uncommitted epoch, every restart would replay the same growth.)
func TestLuaMemoryGrowthStopsTheAgentWithoutACrashLoop(t *testing.T) {
	const n = 12
	brokers := testBroker(t, 1, "in", "out")
	script := `local s = require("stoat")
local b = s.builder()
kept = {}
b:stream("in"):mapValues(function(v)
  kept[#kept + 1] = string.rep(v, 2^20 / #v)
  return v
end):to("out")
return b`
	cfg := testConfigWith(t, brokers, script, "lua.memory.max.bytes = 8388608", "processing.guarantee = \"exactly_once_v2\"\n")
	ra := startAgent(t, cfg)
	failed := -1
	for i := 0; i < n && failed < 0; i++ {
		end := committedEnd(t, brokers, "out")
		produce(t, brokers, "in", 0, 1, nil, i)
		pollFor(t, 30*time.Second, fmt.Sprintf("record %d committed or the agent stopped", i), func() bool {
			select {
			case err := <-ra.done:
				m := regexp.MustCompile(`in-0@(\d+)`).FindStringSubmatch(fmt.Sprint(err))
				if m == nil || !strings.Contains(err.Error(), "p.lua:5: ") || !strings.Contains(err.Error(), "Lua memory budget of 8.0 MiB (agent.lua.memory.max.bytes)") {
					t.Fatalf("err = %v, want the memory budget at p.lua:5 naming the record", err)
				}
				failed, _ = strconv.Atoi(m[1])
				return true
			default:
				return committedEnd(t, brokers, "out") > end
			}
		})
	}
	if failed < 4 {
		t.Fatalf("failed at offset %d; 8 MiB hold about 7 records", failed)
	}
	if st := ra.a.State(); st != StateError {
		t.Fatalf("state %s, want ERROR", st)
	}
	ra = startAgent(t, cfg)
	defer ra.stop(t)
	produce(t, brokers, "in", 0, n-failed-1, nil, failed+1)
	keys := map[string]bool{}
	for _, m := range readCommitted(t, brokers, "out", n) {
		keys[string(m.Key)] = true
	}
	if len(keys) != n {
		t.Fatalf("output keys %v, want each of the %d records once", keys, n)
	}
	if st := ra.a.State(); st != StateRunning {
		t.Fatalf("after the restart: state %s, want RUNNING", st)
	}
}
