//go:build kafka && !race

package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent/console"
)

// checkTaskAgents waits until every agent of procs answers GET /v1/status with every task
// of the application (tasks of them) named to the same agent of procs, its own tasks with
// their lag and the others' without; it returns how many tasks each agent runs. (Not a lag
// of 0: the consumer's position stops before the marker that ends an exactly-once
// transaction, so a partition written transactionally, as the repartition topics are, shows
// 1 when caught up.)
func checkTaskAgents(t *testing.T, procs []*replicaProcess, tasks int) map[string]int {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	addrs := map[string]bool{}
	for _, p := range procs {
		addrs[p.addr] = true
	}
	var last string
	deadline := time.Now().Add(time.Minute)
	for {
		last = ""
		owners, lags := map[string]string{}, map[string]int64{}
		for _, p := range procs {
			var st console.Status
			resp, err := c.Get("http://" + p.addr + "/v1/status")
			if err == nil {
				err = json.NewDecoder(resp.Body).Decode(&st)
				resp.Body.Close()
			}
			switch {
			case err != nil:
				last = err.Error()
			case st.Assignment == nil || st.Assignment.GroupProtocol != "streams" || st.Assignment.Self != p.addr || len(st.Assignment.Tasks) != tasks:
				last = fmt.Sprintf("%s: assignment %+v, want the %d tasks of a streams group", p.addr, st.Assignment, tasks)
			}
			if last != "" {
				break
			}
			for _, task := range st.Assignment.Tasks {
				mine := task.Agent == p.addr
				switch {
				case !addrs[task.Agent]:
					last = fmt.Sprintf("%s names %q as the agent of task %s", p.addr, task.Agent, task.TaskID)
				case owners[task.TaskID] != "" && owners[task.TaskID] != task.Agent:
					last = fmt.Sprintf("%s names %s as the agent of task %s, another %s", p.addr, task.Agent, task.TaskID, owners[task.TaskID])
				case task.ThisAgent != mine:
					last = fmt.Sprintf("%s: task %s run by %s, thisAgent %v", p.addr, task.TaskID, task.Agent, task.ThisAgent)
				case mine && (task.RecordsLag == nil || *task.RecordsLag < 0):
					last = fmt.Sprintf("%s: its task %s has lag %v, want its consumer's", p.addr, task.TaskID, task.RecordsLag)
				case !mine && task.RecordsLag != nil:
					last = fmt.Sprintf("%s: another agent's task %s has lag %d", p.addr, task.TaskID, *task.RecordsLag)
				}
				owners[task.TaskID] = task.Agent
				if mine && task.RecordsLag != nil {
					lags[task.TaskID] = *task.RecordsLag
				}
			}
		}
		if last == "" {
			n := map[string]int{}
			for _, agent := range owners {
				n[agent]++
			}
			t.Logf("tasks by agent in /v1/status: %v; their lags: %v", n, lags)
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agents' /v1/status do not agree on which agent runs each task: %s", last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
