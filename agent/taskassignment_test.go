package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/agent/console"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

// twoSubtopologies are the tasks of an application of two sub-topologies over two
// partitions, the second reading a repartition topic.
func twoSubtopologies() *appTasks {
	return &appTasks{
		ids:    []pipeline.TaskID{{Subtopology: 0, Partition: 0}, {Subtopology: 0, Partition: 1}, {Subtopology: 1, Partition: 0}, {Subtopology: 1, Partition: 1}},
		topics: map[string]int{"in": 0, "app-KSTREAM-REPARTITION-0000000003-repartition": 1},
	}
}

// assignmentRows writes a view of the tasks as one line per task: id, agent, "*" for this
// agent's, the standbys, the lag ("null" for another agent's task).
func assignmentRows(t *testing.T, a *console.Assignment) string {
	t.Helper()
	// Through JSON, as GET /v1/status answers it.
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Tasks []struct {
			TaskID     string          `json:"taskId"`
			Agent      string          `json:"agent"`
			ThisAgent  bool            `json:"thisAgent"`
			Standbys   []string        `json:"standbys"`
			RecordsLag json.RawMessage `json:"recordsLag"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, task := range back.Tasks {
		here := ""
		if task.ThisAgent {
			here = "*"
		}
		rows = append(rows, fmt.Sprintf("%s %q%s %v %s", task.TaskID, task.Agent, here, task.Standbys, task.RecordsLag))
	}
	return strings.Join(rows, "\n")
}

func TestAssignmentInAClassicGroup(t *testing.T) {
	lags := map[pipeline.TaskID]int64{{Subtopology: 0, Partition: 0}: 12, {Subtopology: 0, Partition: 1}: -1, {Subtopology: 1, Partition: 0}: 0}
	for _, tc := range []struct {
		name string
		self string
		role *kafkaio.GroupRole
		want string
	}{
		{"the active runs every task", "a:9464", &kafkaio.GroupRole{Active: true, ActiveHost: "a:9464", StandbyHosts: []string{"b:9464"}}, `0_0 "a:9464"* [b:9464] 12
0_1 "a:9464"* [b:9464] -1
1_0 "a:9464"* [b:9464] 0
1_1 "a:9464"* [b:9464] -1`},
		{"an active without application.server", "", &kafkaio.GroupRole{Active: true}, `0_0 ""* [] 12
0_1 ""* [] -1
1_0 ""* [] 0
1_1 ""* [] -1`},
		{"a standby names the active", "b:9464", &kafkaio.GroupRole{ActiveHost: "a:9464", StandbyHosts: []string{"b:9464"}}, `0_0 "a:9464" [b:9464] null
0_1 "a:9464" [b:9464] null
1_0 "a:9464" [b:9464] null
1_1 "a:9464" [b:9464] null`},
		{"before the first generation", "a:9464", nil, `0_0 "" [] null
0_1 "" [] null
1_0 "" [] null
1_1 "" [] null`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := buildAssignment(assignmentInput{protocol: "classic", self: tc.self, tasks: twoSubtopologies(), lags: lags, role: tc.role})
			if a.GroupProtocol != "classic" || a.Self != tc.self {
				t.Errorf("protocol %q, self %q", a.GroupProtocol, a.Self)
			}
			if got := assignmentRows(t, a); got != tc.want {
				t.Errorf("tasks:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// In a streams group the endpoint information, by topic partition, names the agent of each
// task: the repartition topic's partitions are the second sub-topology's tasks. This agent's
// own tasks are its own before the endpoint information names them; a task none runs (it
// moves) has no agent.
func TestAssignmentInAStreamsGroup(t *testing.T) {
	rep := "app-KSTREAM-REPARTITION-0000000003-repartition"
	idx := &kafkaio.EndpointIndex{
		Active: map[pipeline.TopicPartition]string{
			{Topic: "in", Partition: 0}: "a:9464", {Topic: "in", Partition: 1}: "b:9464",
			{Topic: rep, Partition: 1}:         "b:9464",
			{Topic: "elsewhere", Partition: 0}: "c:9464", // no topic of this topology
		},
		Standby: map[pipeline.TopicPartition][]string{
			{Topic: "in", Partition: 1}: {"c:9464", "a:9464"},
			{Topic: rep, Partition: 1}:  {"a:9464"},
		},
	}
	local := map[pipeline.TaskID]bool{{Subtopology: 0, Partition: 0}: true, {Subtopology: 1, Partition: 0}: true}
	lags := map[pipeline.TaskID]int64{{Subtopology: 0, Partition: 0}: 3, {Subtopology: 1, Partition: 0}: 40}
	in := assignmentInput{protocol: "streams", self: "a:9464", tasks: twoSubtopologies(), lags: lags, local: local, endpoints: idx}
	want := `0_0 "a:9464"* [] 3
0_1 "b:9464" [a:9464 c:9464] null
1_0 "a:9464"* [] 40
1_1 "b:9464" [a:9464] null`
	if got := assignmentRows(t, buildAssignment(in)); got != want {
		t.Errorf("tasks:\n%s\nwant:\n%s", got, want)
	}

	// Before the coordinator sent the endpoint information only this agent's tasks have one.
	in.endpoints = nil
	want = `0_0 "a:9464"* [] 3
0_1 "" [] null
1_0 "a:9464"* [] 40
1_1 "" [] null`
	if got := assignmentRows(t, buildAssignment(in)); got != want {
		t.Errorf("without endpoints, tasks:\n%s\nwant:\n%s", got, want)
	}
}

// A task's lag is the sum of its partitions' consumer lag; -1 until the consumer fetched one
// of them; 0 for a task fed by an in-memory repartition only. The gauge follows, its series
// going with the task.
func TestTaskLagSumsTheTasksPartitions(t *testing.T) {
	b := pipeline.NewStreamsBuilder(pipeline.Serdes{})
	for _, topic := range []string{"left", "right"} {
		if _, err := b.Stream([]string{topic}, pipeline.Consumed{}); err != nil {
			t.Fatal(err)
		}
	}
	m := metrics.New()
	l := &loop{a: &Agent{metrics: m}, sources: b.SourceTasks()}
	task := func(sub int, p int32) pipeline.TaskID { return pipeline.TaskID{Subtopology: sub, Partition: p} }
	left := func(p int32) pipeline.TopicPartition { return pipeline.TopicPartition{Topic: "left", Partition: p} }
	right := func(p int32) pipeline.TopicPartition { return pipeline.TopicPartition{Topic: "right", Partition: p} }
	sub := func(topic string) int {
		id, _ := l.sources.Of(pipeline.TopicPartition{Topic: topic})
		return id.Subtopology
	}
	l0, r0 := sub("left"), sub("right")
	// The "right" tasks of partition 1 stand for a task without a Kafka partition here.
	l.owners = map[pipeline.TaskID]int{task(l0, 0): 0, task(l0, 1): 0, task(r0, 0): 0, task(r0, 1): 0}
	l.assignment = []pipeline.TopicPartition{left(0), left(1), right(0)}
	l.reportTaskLags(map[pipeline.TopicPartition]int64{left(0): 5, right(0): 7})
	want := map[pipeline.TaskID]int64{task(l0, 0): 5, task(l0, 1): -1, task(r0, 0): 7, task(r0, 1): 0}
	if got := *l.a.taskLags.Load(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("lags %v, want %v", got, want)
	}
	if n := testutil.CollectAndCount(m.TaskLag); n != 3 {
		t.Errorf("%d task lag series, want 3 (none for the task whose lag is unknown)", n)
	}
	if got := testutil.ToFloat64(m.TaskLag.WithLabelValues(task(l0, 0).String())); got != 5 {
		t.Errorf("gauge of %v: %v", task(l0, 0), got)
	}

	// A task that leaves the agent takes its series along.
	delete(l.owners, task(r0, 0))
	l.reportTaskLags(map[pipeline.TopicPartition]int64{left(0): 1, left(1): 2})
	if n := testutil.CollectAndCount(m.TaskLag); n != 3 {
		t.Errorf("%d task lag series after a task left, want 3", n)
	}
	l.standby = true
	l.reportTaskLags(nil)
	if n := testutil.CollectAndCount(m.TaskLag); n != 0 {
		t.Errorf("%d task lag series on a standby", n)
	}
}

// GET /v1/status of a running classic agent names it as the agent of every task of the
// application, with each task's lag, which reaches 0 once it read what was written.
func TestStatusNamesTheAgentOfEveryTask(t *testing.T) {
	brokers := testBroker(t, 2, "in", "out")
	ra := startAgent(t, testConfig(t, brokers, wordCountScript, `application.server = "stoat-1:9464"`))
	t.Cleanup(func() { _ = ra.stop(t) })
	produceLines(t, brokers, 2, 50, 0)
	addr, err := ra.a.HTTPAddr(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var st console.Status
	pollFor(t, 30*time.Second, "every task's lag at 0", func() bool {
		st = console.Status{}
		if err := json.Unmarshal([]byte(httpGet(t, "http://"+addr+"/v1/status")), &st); err != nil {
			t.Fatal(err)
		}
		if st.Assignment == nil || len(st.Assignment.Tasks) == 0 {
			return false
		}
		for _, task := range st.Assignment.Tasks {
			if task.RecordsLag == nil || *task.RecordsLag != 0 {
				return false
			}
		}
		return true
	})
	a := st.Assignment
	if a.GroupProtocol != "classic" || a.Self != "stoat-1:9464" {
		t.Errorf("assignment %+v", a)
	}
	var ids []string
	for _, task := range a.Tasks {
		ids = append(ids, task.TaskID)
		if !task.ThisAgent || task.Agent != "stoat-1:9464" {
			t.Errorf("task %+v", task)
		}
	}
	if got := strings.Join(ids, " "); got != "0_0 0_1 1_0 1_1" {
		t.Errorf("tasks %s", got)
	}
}
