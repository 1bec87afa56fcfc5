//go:build kafka && !race

// Agents sharing a streams group on Apache Kafka 4.4 (processes killed with SIGKILL; without
// the race detector, as the other process tests: IBM/sarama#2913).

package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// TestKafkaStreamsGroupSharesAndTakesOverTasks: two agent processes with group.protocol =
// "streams" share an exactly-once word count (a repartition and a count): the broker splits
// its tasks between them and each runs some; the read_committed output counts every word
// exactly once. Each agent names, for every word, the agent whose task counts it
// (/v1/metadata, from the group's endpoint information), which answers its count, and the
// other redirects a read of it there; a range over the whole store and its count, asked of
// either, are answered exactly from both agents' partitions. Then one is killed with SIGKILL: once the broker
// drops it, the other runs every task, names itself for every word, and the output stays
// exact.
func TestKafkaStreamsGroupSharesAndTakesOverTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes; not in -short")
	}
	c := kafkatest.Start(t, kafkatest.Options{})
	b := onCluster(t, c, 4, "in", "out")
	app := kafkatest.Name(t, "app")
	// The broker drops a killed member after the group's session timeout (45 s by default).
	setStreamsGroupConfig(t, c, app, map[string]string{"streams.session.timeout.ms": "6000", "streams.heartbeat.interval.ms": "500"})
	var procs []*replicaProcess
	for i := range 2 {
		procs = append(procs, streamsAgent(t, b, app, wordCountScript, fmt.Sprintf("group.instance.id = \"agent-%d\"", i)))
	}
	for _, p := range procs {
		p.start(t)
	}
	const tasks = 8 // two sub-topologies of 4 partitions
	sharing := func() bool {
		n0, n1 := procs[0].tasks(), procs[1].tasks()
		return n0 > 0 && n1 > 0 && n0+n1 == tasks && procs[0].state() == "RUNNING" && procs[1].state() == "RUNNING"
	}
	pollFor(t, 2*time.Minute, "both agents RUNNING with the 8 tasks between them", sharing)
	t.Logf("tasks: agent-0 %d, agent-1 %d", procs[0].tasks(), procs[1].tasks())
	both := slices.Sorted(slices.Values([]string{procs[0].addr, procs[1].addr}))
	pollFor(t, 30*time.Second, "both agents' /readyz naming both as running active tasks", func() bool {
		return slices.Equal(procs[0].readyz().ActiveHosts, both) && slices.Equal(procs[1].readyz().ActiveHosts, both)
	})
	want := produceLinesTo(t, b.brokers, b.topic(t, "in"), 4, 600, 0)
	b.checkExactCounts(t, want)
	owned := checkQueriesAcrossAgents(t, procs, want)
	if len(owned[procs[0].addr]) == 0 || len(owned[procs[1].addr]) == 0 {
		t.Fatalf("words by owner %v: want words on both agents", owned)
	}
	t.Logf("words by owner: %v", owned)
	if n := checkTaskAgents(t, procs, tasks); n[procs[0].addr] != procs[0].tasks() || n[procs[1].addr] != procs[1].tasks() {
		t.Fatalf("tasks by agent in /v1/status %v, want those the agents run", n)
	}

	if err := procs[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = procs[0].cmd.Wait()
	killed := time.Now()
	more := produceLinesTo(t, b.brokers, b.topic(t, "in"), 4, 600, 600)
	for w, n := range more {
		want[w] += n
	}
	pollFor(t, 2*time.Minute, "the other agent running every task", func() bool { return procs[1].tasks() == tasks })
	t.Logf("agent-1 runs every task %v after agent-0 was killed", time.Since(killed).Round(10*time.Millisecond))
	b.checkExactCounts(t, want)
	if owned := checkQueriesAcrossAgents(t, procs[1:], want); len(owned[procs[1].addr]) != len(want) {
		t.Fatalf("words by owner after the kill: %v, want every word on the survivor", owned)
	}
	t.Logf("the survivor names itself for every word %v after agent-0 was killed", time.Since(killed).Round(10*time.Millisecond))
	checkTaskAgents(t, procs[1:], tasks)
	pollFor(t, 30*time.Second, "the survivor's /readyz naming itself alone", func() bool {
		return slices.Equal(procs[1].readyz().ActiveHosts, []string{procs[1].addr})
	})
	if err := procs[1].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := procs[1].cmd.Wait(); err != nil {
		t.Fatalf("agent exit: %v", err)
	}
}

// streamsAgent writes the config of an agent process running script on b, exactly-once, in
// app's streams group, with extra lines in its [streams] table, and kills the process at the
// end of the test if it still runs. The caller starts it.
func streamsAgent(t *testing.T, b *brokerUnderTest, app, script, extra string) *replicaProcess {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.lua"), []byte(b.script(script)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &replicaProcess{config: filepath.Join(dir, "agent.toml"), addr: freeAddr(t)}
	toml := fmt.Sprintf(`
[agent]
scripts = ["p.lua"]
http.listen = %q
[streams]
application.id = %q
bootstrap.servers = %q
group.protocol = "streams"
processing.guarantee = "exactly_once_v2"
commit.interval.ms = 100
statestore.cache.max.bytes = 0
state.dir = %q
application.server = %q
transaction.timeout.ms = 5000
%s
`, p.addr, app, strings.Join(b.brokers, ","), filepath.Join(dir, "state"), p.addr, extra)
	if err := os.WriteFile(p.config, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd != nil && p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// checkQueriesAcrossAgents waits until every agent of procs names, for every word of want,
// the same agent of procs as the one counting it (GET /v1/metadata/counts/{word}), and
// /v1/metadata lists each agent's partitions; then reads each word's count at its owner, and
// from every other agent, which redirects the read to the owner, and the whole store and its
// count at every agent. It returns the words by owner.
func checkQueriesAcrossAgents(t *testing.T, procs []*replicaProcess, want map[string]int64) map[string][]string {
	t.Helper()
	noFollow := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	getJSON := func(c *http.Client, url string, v any) (int, http.Header, error) {
		resp, err := c.Get(url)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && v != nil && resp.StatusCode == http.StatusOK {
			err = json.Unmarshal(body, v)
		}
		if err == nil && resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTemporaryRedirect {
			err = fmt.Errorf("%s: %d %s", url, resp.StatusCode, body)
		}
		return resp.StatusCode, resp.Header, err
	}
	addrs := map[string]bool{}
	for _, p := range procs {
		addrs[p.addr] = true
	}
	var owners map[string]string
	var last string
	deadline := time.Now().Add(time.Minute)
	for {
		owners, last = map[string]string{}, ""
		for w := range want {
			for _, p := range procs {
				var md struct{ ActiveHost string }
				if _, _, err := getJSON(noFollow, "http://"+p.addr+"/v1/metadata/counts/"+w, &md); err != nil {
					last = err.Error()
					continue
				}
				if o, seen := owners[w]; !addrs[md.ActiveHost] || (seen && o != md.ActiveHost) {
					last = fmt.Sprintf("%s names %s as the owner of %q, another agent %q", p.addr, md.ActiveHost, w, o)
					continue
				}
				owners[w] = md.ActiveHost
			}
		}
		for _, p := range procs {
			var all []struct {
				HostInfo        string
				StorePartitions map[string][]int32
			}
			if _, _, err := getJSON(noFollow, "http://"+p.addr+"/v1/metadata", &all); err != nil {
				last = err.Error()
				continue
			}
			n := 0
			for _, h := range all {
				n += len(h.StorePartitions["counts"])
			}
			if len(all) != len(procs) || n != 4 {
				last = fmt.Sprintf("%s lists %+v, want the %d agents with the 4 partitions of counts between them", p.addr, all, len(procs))
			}
		}
		if last == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agents do not agree on where each word is counted: %s", last)
		}
		time.Sleep(200 * time.Millisecond)
	}
	byOwner := map[string][]string{}
	for w, n := range want {
		owner := owners[w]
		byOwner[owner] = append(byOwner[owner], w)
		path := "/v1/stores/counts/keys/" + w + "?isolation=READ_COMMITTED"
		var item struct{ Value int64 }
		if st, _, err := getJSON(noFollow, "http://"+owner+path, &item); err != nil || st != http.StatusOK || item.Value != n {
			t.Fatalf("GET %s at its owner %s: %d %+v %v, want the count %d", path, owner, st, item, err, n)
		}
		for _, p := range procs {
			if p.addr == owner {
				continue
			}
			st, h, err := getJSON(noFollow, "http://"+p.addr+path, nil)
			if err != nil || st != http.StatusTemporaryRedirect || h.Get("Location") != "http://"+owner+path {
				t.Fatalf("GET %s at %s: %d %v %v, want 307 to %s", path, p.addr, st, h, err, owner)
			}
			item.Value = 0
			if st, _, err := getJSON(http.DefaultClient, "http://"+p.addr+path, &item); err != nil || st != http.StatusOK || item.Value != n {
				t.Fatalf("GET %s at %s, following the redirect: %d %+v %v, want the count %d", path, p.addr, st, item, err, n)
			}
		}
	}
	for _, p := range procs {
		checkRangeAndCountAt(t, p.addr, want)
	}
	for _, ws := range byOwner {
		slices.Sort(ws)
	}
	return byOwner
}

// checkRangeAndCountAt reads the whole counts store at one agent, 7 words a page, and its
// count: whichever agents run its partitions, the agent asked answers every word's count
// exactly, in key order, and counts every word once (docs/queries.md: it asks the other
// agents for theirs and merges).
func checkRangeAndCountAt(t *testing.T, addr string, want map[string]int64) {
	t.Helper()
	start := time.Now()
	got := map[string]int64{}
	var order []string
	after := ""
	pages := 0
	for ; ; pages++ {
		if pages > len(want) {
			t.Fatalf("paging through counts at %s did not end: %v", addr, order)
		}
		u := "http://" + addr + "/v1/stores/counts/keys?isolation=READ_COMMITTED&limit=7"
		if after != "" {
			u += "&after=" + url.QueryEscape(after)
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		var page struct {
			Items []struct {
				Key   string
				Value int64
			}
			Next, Error string
		}
		if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(body, &page) != nil || page.Error != "" {
			t.Fatalf("GET %s: %d %s %v", u, resp.StatusCode, body, err)
		}
		for _, it := range page.Items {
			got[it.Key] += it.Value
			order = append(order, it.Key)
		}
		if after = page.Next; after == "" {
			break
		}
	}
	if !slices.IsSorted(order) || len(order) != len(want) {
		t.Errorf("the range at %s read %d words, in order %v; want the %d words once each, in key order", addr, len(order), order, len(want))
	}
	for w, n := range want {
		if got[w] != n {
			t.Errorf("the range at %s: %q counted %d, want %d", addr, w, got[w], n)
		}
	}
	resp, err := http.Get("http://" + addr + "/v1/stores/counts/count?isolation=READ_COMMITTED")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct{ Count int64 }
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != http.StatusOK || c.Count != int64(len(want)) {
		t.Errorf("count at %s: %d %+v %v, want %d words", addr, resp.StatusCode, c, err, len(want))
	}
	t.Logf("%s read the %d words in %d pages and counted them in %v", addr, len(order), pages+1, time.Since(start).Round(time.Millisecond))
}

// setStreamsGroupConfig sets a streams group's configs (streams.session.timeout.ms, ...)
// before its members join.
func setStreamsGroupConfig(t *testing.T, c *kafkatest.Cluster, group string, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range configs {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value, cfg.Op = k, kmsg.StringPtr(v), kmsg.IncrementalAlterConfigOpSet
		r.Configs = append(r.Configs, cfg)
	}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(t.Context(), c.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range resp.Resources {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			t.Fatalf("group config of %s: %v (%v)", group, err, res.ErrorMessage)
		}
	}
}
