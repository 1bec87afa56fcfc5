package kafkaio

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/pipeline"
)

// TaskID names a task as Kafka Streams does, <subtopology>_<partition>: the sub-topology's
// id (describe()'s) and the partition of its source topics the task reads.
type TaskID struct {
	Subtopology int
	Partition   int32
}

func (t TaskID) String() string {
	return strconv.Itoa(t.Subtopology) + "_" + strconv.Itoa(int(t.Partition))
}

func compareTasks(a, b TaskID) int {
	if a.Subtopology != b.Subtopology {
		return a.Subtopology - b.Subtopology
	}
	return int(a.Partition) - int(b.Partition)
}

// Assignment is a member's tasks, each list sorted.
type Assignment struct {
	Active  []TaskID
	Standby []TaskID
	Warmup  []TaskID
}

// Equal reports whether two assignments hold the same tasks.
func (a Assignment) Equal(b Assignment) bool {
	return slices.Equal(a.Active, b.Active) && slices.Equal(a.Standby, b.Standby) && slices.Equal(a.Warmup, b.Warmup)
}

// Empty reports whether the assignment holds no task.
func (a Assignment) Empty() bool {
	return len(a.Active) == 0 && len(a.Standby) == 0 && len(a.Warmup) == 0
}

func (a Assignment) String() string {
	return fmt.Sprintf("active %v, standby %v, warmup %v", a.Active, a.Standby, a.Warmup)
}

// fromTaskIDs reads the broker's task lists: a sub-topology id that is not a number (no
// topology StoatFlow declares has one) is an error.
func fromTaskIDs(lists []kmsg.TaskIDs) ([]TaskID, error) {
	out := []TaskID{}
	for _, l := range lists {
		sub, err := strconv.Atoi(l.SubtopologyID)
		if err != nil || sub < 0 {
			return nil, fmt.Errorf("the broker assigned tasks of sub-topology %q, which is not one of the declared topology's", l.SubtopologyID)
		}
		for _, p := range l.Partitions {
			out = append(out, TaskID{Subtopology: sub, Partition: p})
		}
	}
	slices.SortFunc(out, compareTasks)
	return slices.Compact(out), nil
}

// toTaskIDs writes tasks as the broker's lists, one per sub-topology (never nil: an empty
// list says the member owns none).
func toTaskIDs(tasks []TaskID) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, t := range tasks {
		id := strconv.Itoa(t.Subtopology)
		if n := len(out); n > 0 && out[n-1].SubtopologyID == id {
			out[n-1].Partitions = append(out[n-1].Partitions, t.Partition)
			continue
		}
		l := kmsg.NewTaskIDs()
		l.SubtopologyID, l.Partitions = id, []int32{t.Partition}
		out = append(out, l)
	}
	return out
}

// toTaskOffsets writes per-task offset sums in task order.
func toTaskOffsets(m map[TaskID]int64) []kmsg.TaskOffset {
	tasks := make([]TaskID, 0, len(m))
	for t := range m {
		tasks = append(tasks, t)
	}
	slices.SortFunc(tasks, compareTasks)
	out := make([]kmsg.TaskOffset, 0, len(tasks))
	for _, t := range tasks {
		o := kmsg.NewTaskOffset()
		o.SubtopologyID, o.Partition, o.Offset = strconv.Itoa(t.Subtopology), t.Partition, m[t]
		out = append(out, o)
	}
	return out
}

// minus is the tasks of a that b does not have (both sorted).
func minus(a, b []TaskID) []TaskID {
	var out []TaskID
	for _, t := range a {
		if _, found := slices.BinarySearchFunc(b, t, compareTasks); !found {
			out = append(out, t)
		}
	}
	return out
}

// EndpointPartitions are the partitions of the tasks an application.server endpoint runs:
// its active tasks' source partitions (repartition topics included), and its standby and
// warmup tasks'.
type EndpointPartitions struct {
	Active  []pipeline.TopicPartition
	Standby []pipeline.TopicPartition
}

// EndpointIndex is the group's endpoint information as the broker last sent it (Kafka
// Streams' StreamsMetadataState): the partitions each application.server endpoint runs,
// and, indexed by topic partition, the endpoint running each one's active task and those
// keeping standby copies. A member without an endpoint is in none of it. It is not
// changed once made: a newer heartbeat's information makes a new one.
type EndpointIndex struct {
	// Endpoints are the partitions by endpoint (host:port).
	Endpoints map[string]EndpointPartitions
	// Active is the endpoint whose member runs the partition's active task.
	Active map[pipeline.TopicPartition]string
	// Standby are the endpoints keeping standby copies of the partition's task, sorted.
	Standby map[pipeline.TopicPartition][]string
}

// indexEndpoints reads the partitions by endpoint the broker sends, the entries of one
// endpoint (one per member, so several for an agent with several members) put together.
func indexEndpoints(list []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint) *EndpointIndex {
	idx := &EndpointIndex{Endpoints: map[string]EndpointPartitions{}, Active: map[pipeline.TopicPartition]string{}, Standby: map[pipeline.TopicPartition][]string{}}
	for _, e := range list {
		key := hostPort(e.UserEndpoint.Host, int(e.UserEndpoint.Port))
		ep := idx.Endpoints[key]
		for _, tp := range e.ActivePartitions {
			for _, p := range tp.Partitions {
				ep.Active = append(ep.Active, pipeline.TopicPartition{Topic: tp.Topic, Partition: p})
			}
		}
		for _, tp := range e.StandbyPartitions {
			for _, p := range tp.Partitions {
				ep.Standby = append(ep.Standby, pipeline.TopicPartition{Topic: tp.Topic, Partition: p})
			}
		}
		idx.Endpoints[key] = ep
	}
	for _, key := range slices.Sorted(maps.Keys(idx.Endpoints)) {
		ep := idx.Endpoints[key]
		ep.Active, ep.Standby = sortedPartitions(ep.Active), sortedPartitions(ep.Standby)
		idx.Endpoints[key] = ep
		for _, tp := range ep.Active {
			idx.Active[tp] = key
		}
		for _, tp := range ep.Standby {
			idx.Standby[tp] = append(idx.Standby[tp], key)
		}
	}
	return idx
}

func sortedPartitions(tps []pipeline.TopicPartition) []pipeline.TopicPartition {
	slices.SortFunc(tps, func(a, b pipeline.TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition) - int(b.Partition)
	})
	return slices.Compact(tps)
}
