package kafkaio

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A StreamsMember is one member of a Kafka streams group (KIP-1071, group.protocol =
// streams): it joins with the application's topology, heartbeats at the interval the
// broker gives, and takes the active, standby and warmup tasks the broker assigns it,
// following the state machine of Kafka Streams 4.4's StreamsMembershipManager. Tasks change
// hands only through the application: a change comes as a Reconciliation, which the
// application carries out at its commit barrier (it commits the active tasks it gives up
// before closing them) and then acknowledges with Reconciled; only then does the member tell the
// broker, which gives those tasks to another member once it has.
//
// The member runs one goroutine. Its methods are safe for concurrent use.
type StreamsMember struct {
	cfg      StreamsMemberConfig
	conn     *groupConn
	log      *slog.Logger
	memberID string

	wake    chan struct{} // the heartbeat loop: something changed, heartbeat now if due
	changed chan struct{} // the application: a reconciliation waits
	stop    chan struct{} // Close: leave and stop
	done    chan struct{} // the loop ended
	closing sync.Once

	mu    sync.Mutex
	state memberState
	epoch int32
	err   error // why the member stopped, nil after a clean leave

	// target is the broker's last assignment; current is what the application runs (it
	// acknowledged it); pending is the reconciliation handed to the application.
	target, current Assignment
	ready           bool
	pending         *Reconciliation
	seq             uint64
	// rejoin: the member was fenced and joins again once the application let go of its
	// tasks (the Lost reconciliation is done).
	rejoin bool

	// What the last heartbeat told the broker; nil or unset means "send it".
	sentOwned            *Assignment
	offsets, endOffsets  map[TaskID]int64
	sentOffsets, sentEnd map[TaskID]int64
	offsetsSentAt        time.Time

	interval, offsetInterval time.Duration
	recoveryLag              int64
	endpointEpoch            int32
	endpoints                *EndpointIndex
	statuses                 []GroupStatus
	missingSince             time.Time
	shutdown                 bool
	urgent                   bool // heartbeat now (a shutdown request)
	lastBeat                 time.Time
}

// StreamsMemberConfig configures a member.
type StreamsMemberConfig struct {
	// Brokers are bootstrap.servers.
	Brokers []string
	// Client is the main consumer's config (SaramaConfig with RoleConsumer): its client
	// id, timeouts, TLS and SASL are the member's.
	Client *sarama.Config
	// Group is the group id: application.id.
	Group string
	// InstanceID is group.instance.id, "" for a dynamic member.
	InstanceID string
	// ProcessID names the agent process (Kafka Streams' process id, a UUID it keeps in its
	// state directory): the broker puts standby and active copies of a task on different
	// processes. "" makes a random one.
	ProcessID string
	// Endpoint is application.server (host:port), "" for none.
	Endpoint string
	// RackID is client.rack; ClientTags are client.tag.* (rack-aware standby placement).
	RackID     string
	ClientTags map[string]string
	// RebalanceTimeout is how long the broker waits for the member to give tasks back
	// (Kafka Streams sends max.poll.interval.ms; 0 means its default, 5 minutes). A member
	// that takes longer is fenced.
	RebalanceTimeout time.Duration
	// RequestTimeout bounds each request (request.timeout.ms); RetryBackoff and
	// RetryBackoffMax space the retries after a failed heartbeat (retry.backoff.ms,
	// retry.backoff.max.ms).
	RequestTimeout, RetryBackoff, RetryBackoffMax time.Duration
	// Topology is what the member declares.
	Topology *StreamsTopology
	Logger   *slog.Logger
}

// memberState is the member's place in the protocol, as StreamsMembershipManager's
// MemberState.
type memberState int

const (
	stateJoining       memberState = iota // the next heartbeat joins (epoch 0, with the topology)
	stateReconciling                      // the broker's assignment differs from what the application runs
	stateAcknowledging                    // the application carried out a reconciliation: tell the broker now
	stateStable                           // the application runs the broker's assignment
	stateFenced                           // fenced: waiting for the application to drop its tasks
	stateLeaving                          // the leave heartbeat goes out next
	stateLeft                             // out of the group, the loop has ended
	stateFatal                            // failed for good, the loop has ended
)

func (s memberState) String() string {
	return [...]string{"JOINING", "RECONCILING", "ACKNOWLEDGING", "STABLE", "FENCED", "LEAVING", "LEFT", "FATAL"}[s]
}

// A Reconciliation is a change of the member's tasks for the application to carry out at
// its barrier, then acknowledge with Reconciled.
type Reconciliation struct {
	// Lost: the member lost every task it had (fenced, or its membership expired): the
	// application drops them without committing (aborts the epoch), as Kafka Streams'
	// onAllTasksLost; the member joins again once it is reconciled. Target is empty then.
	Lost bool
	// Revoke are the active tasks the application gives up: it commits them, then closes
	// them.
	Revoke []TaskID
	// Target is the member's tasks from now on: the application runs the active tasks
	// (those it does not run yet are new), keeps the standby and warmup tasks caught up
	// from their changelogs, and drops the standby and warmup tasks not listed.
	Target Assignment
	// Ready is whether the group was ready when the assignment came (not while source
	// topics are missing, internal topics are being made, the assignment is delayed).
	Ready bool

	seq uint64
}

// GroupStatus is a status the broker reports for the group (StreamsGroupHeartbeat's
// Status).
type GroupStatus struct {
	Code   int8
	Detail string
}

// Status codes of StreamsGroupHeartbeatResponse.
const (
	StatusStaleTopology                int8 = 0
	StatusMissingSourceTopics          int8 = 1
	StatusIncorrectlyPartitionedTopics int8 = 2
	StatusMissingInternalTopics        int8 = 3
	StatusShutdownApplication          int8 = 4
	StatusAssignmentDelayed            int8 = 5
	StatusMissingClientTags            int8 = 6
)

var statusNames = map[int8]string{
	StatusStaleTopology: "STALE_TOPOLOGY", StatusMissingSourceTopics: "MISSING_SOURCE_TOPICS",
	StatusIncorrectlyPartitionedTopics: "INCORRECTLY_PARTITIONED_TOPICS", StatusMissingInternalTopics: "MISSING_INTERNAL_TOPICS",
	StatusShutdownApplication: "SHUTDOWN_APPLICATION", StatusAssignmentDelayed: "ASSIGNMENT_DELAYED",
	StatusMissingClientTags: "MISSING_CLIENT_TAGS",
}

func (s GroupStatus) String() string {
	name, ok := statusNames[s.Code]
	if !ok {
		name = "status " + strconv.Itoa(int(s.Code))
	}
	return name + ": " + s.Detail
}

// Errors a member stops with, wrapped with the broker's words.
var (
	// ErrApplicationShutdown: a member of the group asked every member to shut down
	// (ShutdownApplication).
	ErrApplicationShutdown = errors.New("a member of the streams group requested the shutdown of the whole application")
	// ErrTopologyMismatch: the group runs another topology than the member's.
	ErrTopologyMismatch = errors.New("the streams group runs another topology")
	// ErrMissingSourceTopics: source topics stayed missing past twice the heartbeat
	// interval (Kafka Streams' MissingSourceTopicException).
	ErrMissingSourceTopics = errors.New("missing source topics")
	// ErrIncorrectlyPartitioned: topics joins need co-partitioned are not (Kafka Streams'
	// TopologyException).
	ErrIncorrectlyPartitioned = errors.New("incorrectly partitioned topics")
)

// LeaveMode says how Close leaves the group.
type LeaveMode int

const (
	// LeaveDefault: a static member leaves for now (epoch -2), so that its restart within
	// the session timeout takes its tasks back; a dynamic member leaves (epoch -1).
	LeaveDefault LeaveMode = iota
	// LeaveGroup: the member leaves for good (epoch -1) and its tasks move at once.
	LeaveGroup
)

// Epochs of StreamsGroupHeartbeat.
const (
	joinEpoch        = 0
	leaveEpoch       = -1
	leaveStaticEpoch = -2
)

// JoinStreamsGroup starts a member: it joins at once and heartbeats until Close, or until
// it fails (Done closes, Err says why).
func JoinStreamsGroup(cfg StreamsMemberConfig) (*StreamsMember, error) {
	if cfg.Topology == nil {
		return nil, errors.New("streams group member: no topology")
	}
	if cfg.Group == "" {
		return nil, errors.New("streams group member: no group id (application.id)")
	}
	if cfg.Client == nil {
		return nil, errors.New("streams group member: no client config")
	}
	if cfg.Endpoint != "" {
		if _, _, err := splitEndpoint(cfg.Endpoint); err != nil {
			return nil, fmt.Errorf("streams group member: application.server: %w", err)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ProcessID == "" {
		cfg.ProcessID = RandomUUID()
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.RebalanceTimeout <= 0 {
		cfg.RebalanceTimeout = 5 * time.Minute // max.poll.interval.ms's default
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 100 * time.Millisecond
	}
	cfg.RetryBackoffMax = max(cfg.RetryBackoffMax, cfg.RetryBackoff)
	conn, err := newGroupConn(cfg.Brokers, cfg.Client, cfg.Group)
	if err != nil {
		return nil, err
	}
	m := &StreamsMember{
		cfg: cfg, conn: conn, memberID: randomMemberID(),
		wake: make(chan struct{}, 1), changed: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}),
		state: stateJoining, endpointEpoch: -1, recoveryLag: -1,
		offsets: map[TaskID]int64{}, endOffsets: map[TaskID]int64{},
		target: emptyAssignment(), current: emptyAssignment(),
	}
	m.log = cfg.Logger.With("group", cfg.Group, "member", m.memberID)
	if cfg.InstanceID != "" {
		m.log = m.log.With("instance", cfg.InstanceID)
	}
	go m.run()
	return m, nil
}

func emptyAssignment() Assignment {
	return Assignment{Active: []TaskID{}, Standby: []TaskID{}, Warmup: []TaskID{}}
}

// MemberID is the member's id, made when it started and kept for its life.
func (m *StreamsMember) MemberID() string { return m.memberID }

// Epoch is the member epoch the broker gave last (0 while joining): the generation an
// offset commit names (with MemberID) so that the broker refuses a fenced member's.
func (m *StreamsMember) Epoch() int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epoch
}

// Changed is signalled when a reconciliation waits for the application (Pending).
func (m *StreamsMember) Changed() <-chan struct{} { return m.changed }

// Pending is the reconciliation waiting for the application, nil if none. It stays the
// same until Reconciled, or until a newer one (Lost) replaces it.
func (m *StreamsMember) Pending() *Reconciliation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pending
}

// Reconciled acknowledges a reconciliation the application carried out: the member tells the
// broker at once. A reconciliation that is no longer pending is ignored (it was replaced:
// the member was fenced meanwhile).
func (m *StreamsMember) Reconciled(r *Reconciliation) {
	m.mu.Lock()
	if r == nil || m.pending == nil || r.seq != m.pending.seq {
		m.mu.Unlock()
		return
	}
	m.pending = nil
	if r.Lost {
		m.current = emptyAssignment()
		if m.rejoin {
			m.rejoin = false
			m.joinLocked()
		}
	} else {
		m.current = r.Target
		if m.state == stateReconciling {
			m.state = stateAcknowledging
		}
	}
	m.mu.Unlock()
	m.poke()
}

// Assignment is what the application runs (the last reconciliation it acknowledged).
func (m *StreamsMember) Assignment() Assignment {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

// ReportOffsets sets the task offsets the next heartbeats carry (the broker reads each
// task's lag from them to place tasks and to decide when a warmup task is caught up), as
// Kafka Streams reports them: offsets, for every task whose state this agent holds but its
// running active tasks, is the sum of the task's changelog offsets in the local state;
// endOffsets, for the standby and warmup tasks it keeps, the sum of their changelogs' end
// offsets. They go out with the join, with a changed assignment, and at most every
// task.offset.interval the broker gives (or sooner while a warmup task is caught up).
func (m *StreamsMember) ReportOffsets(offsets, endOffsets map[TaskID]int64) {
	m.mu.Lock()
	m.offsets, m.endOffsets = maps.Clone(offsets), maps.Clone(endOffsets)
	m.mu.Unlock()
}

// Endpoints are the partitions each application.server endpoint of the group runs, as the
// broker sent them last, for interactive queries across agents; nil until it sends them
// (with the member's first assignment). Each heartbeat that brings newer information
// replaces it.
func (m *StreamsMember) Endpoints() *EndpointIndex {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.endpoints
}

// Ready reports whether the group is ready: no status says the broker cannot assign tasks
// (source topics missing, internal topics being made, assignment delayed).
func (m *StreamsMember) Ready() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ready
}

// Statuses are the group's statuses from the last heartbeat.
func (m *StreamsMember) Statuses() []GroupStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.statuses)
}

// State is the member's state, as Kafka Streams names it (JOINING, RECONCILING,
// ACKNOWLEDGING, STABLE, FENCED, LEAVING, LEFT, FATAL).
func (m *StreamsMember) State() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state.String()
}

// RequestShutdown asks every member of the group to shut down (ShutdownApplication, as
// Kafka Streams' SHUTDOWN_APPLICATION uncaught-exception response): the flag goes out with
// every heartbeat from now on, and each member, this one too, stops with
// ErrApplicationShutdown when the broker relays it.
func (m *StreamsMember) RequestShutdown() {
	m.mu.Lock()
	m.shutdown, m.urgent = true, true
	m.mu.Unlock()
	m.poke()
}

// Done is closed when the member stopped: after Close, or after a failure (Err).
func (m *StreamsMember) Done() <-chan struct{} { return m.done }

// Err is why the member stopped: nil while it runs and after a clean Close.
func (m *StreamsMember) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Close leaves the group (once: the leave heartbeat is not retried) and stops the member.
// The application commits and closes its tasks first. It returns the member's error if it
// had failed.
func (m *StreamsMember) Close(ctx context.Context, mode LeaveMode) error {
	m.closing.Do(func() {
		m.mu.Lock()
		switch m.state {
		case stateFatal, stateLeft:
		case stateFenced:
			// The broker no longer knows the member: there is nothing to leave.
			m.state = stateLeft
		default:
			m.state = stateLeaving
			m.epoch = leaveEpoch
			if m.cfg.InstanceID != "" && mode == LeaveDefault {
				m.epoch = leaveStaticEpoch
			}
		}
		m.mu.Unlock()
		close(m.stop)
	})
	select {
	case <-m.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return m.Err()
}

func (m *StreamsMember) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *StreamsMember) signal() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// run is the heartbeat loop.
func (m *StreamsMember) run() {
	defer close(m.done)
	defer m.conn.close()
	failures := 0
	var retryAt time.Time
	for {
		m.mu.Lock()
		st, wait := m.state, m.waitLocked(retryAt)
		m.mu.Unlock()
		switch st {
		case stateLeaving:
			m.leave()
			return
		case stateLeft:
			return
		}
		if wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-m.wake:
			case <-m.stop:
			}
			timer.Stop()
			continue
		}
		err := m.heartbeat()
		var fe *fatalError
		switch {
		case errors.As(err, &fe):
			m.fail(fe.err)
			return
		case err != nil:
			failures++
			wait := backoff(m.cfg.RetryBackoff, m.cfg.RetryBackoffMax, failures)
			retryAt = time.Now().Add(wait)
			m.log.Warn("streams group heartbeat failed; retrying", "error", err, "retry in", wait)
		default:
			failures, retryAt = 0, time.Time{}
		}
	}
}

// waitLocked is how long the loop waits before the next heartbeat: none while joining or
// acknowledging, or to send a shutdown request; the rest of the backoff after a failure;
// else the rest of the heartbeat interval. A fenced member sends nothing until the
// application let go of its tasks (Reconciled wakes the loop).
func (m *StreamsMember) waitLocked(retryAt time.Time) time.Duration {
	now := time.Now()
	switch {
	case m.state == stateFenced:
		return time.Hour
	case now.Before(retryAt):
		return retryAt.Sub(now)
	case m.state == stateJoining || m.state == stateAcknowledging || m.urgent:
		return 0
	}
	return m.lastBeat.Add(m.interval).Sub(now)
}

// backoff is retry.backoff.ms doubled per failure up to retry.backoff.max.ms, with ±20%
// jitter, as Kafka's ExponentialBackoff.
func backoff(base, limit time.Duration, failures int) time.Duration {
	d := float64(base) * math.Pow(2, float64(failures-1))
	d = min(d, float64(limit))
	var b [1]byte
	_, _ = rand.Read(b[:])
	jitter := 0.8 + 0.4*float64(b[0])/255
	return time.Duration(d * jitter)
}

// fatalError ends the member.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }

func fatal(err error) error { return &fatalError{err} }

// fail stops the member for good: the application drops its tasks as if lost.
func (m *StreamsMember) fail(err error) {
	m.mu.Lock()
	m.state, m.err = stateFatal, err
	m.mu.Unlock()
	m.log.Error("streams group member failed", "error", err)
	m.signal()
}

// joinLocked makes the next heartbeat join again: epoch 0, the topology, no tasks.
func (m *StreamsMember) joinLocked() {
	m.state, m.epoch = stateJoining, joinEpoch
	m.sentOwned, m.sentOffsets, m.sentEnd = nil, nil, nil
}

// heartbeat sends one heartbeat and handles its answer. Errors are retried, but those
// wrapped by fatal.
func (m *StreamsMember) heartbeat() error {
	req, joining := m.request()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.RequestTimeout)
	defer cancel()
	resp, err := m.conn.request(ctx, req)
	m.mu.Lock()
	m.lastBeat = time.Now()
	m.mu.Unlock()
	if err != nil {
		if errors.Is(err, ErrStreamsGroupsUnsupported) {
			return fatal(err)
		}
		m.resetSent()
		return err
	}
	hr := resp.(*kmsg.StreamsGroupHeartbeatResponse)
	if err := m.handleError(hr, joining); err != nil {
		return err
	}
	if err := m.handle(hr); err != nil {
		return err
	}
	return nil
}

// request builds the next heartbeat from the member's state: everything when joining,
// then only what changed.
func (m *StreamsMember) request() (*kmsg.StreamsGroupHeartbeatRequest, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.cfg.Group, m.memberID, m.epoch
	req.EndpointInformationEpoch = m.endpointEpoch
	if m.cfg.InstanceID != "" {
		req.InstanceID = kmsg.StringPtr(m.cfg.InstanceID)
	}
	joining := m.state == stateJoining
	now := time.Now()
	if joining {
		topo := m.cfg.Topology.wire
		req.Topology = &topo
		req.RebalanceTimeoutMillis = int32(min(m.cfg.RebalanceTimeout.Milliseconds(), math.MaxInt32))
		req.ProcessID = kmsg.StringPtr(m.cfg.ProcessID)
		if m.cfg.Endpoint != "" {
			host, port, _ := splitEndpoint(m.cfg.Endpoint)
			ep := kmsg.NewStreamsGroupHeartbeatRequestUserEndpoint()
			ep.Host, ep.Port = host, port
			req.UserEndpoint = &ep
		}
		if m.cfg.RackID != "" {
			req.RackID = kmsg.StringPtr(m.cfg.RackID)
		}
		req.ClientTags = []kmsg.StreamsGroupHeartbeatRequestClientTag{}
		for _, k := range sortedKeys(m.cfg.ClientTags) {
			tag := kmsg.NewStreamsGroupHeartbeatRequestClientTag()
			tag.Key, tag.Value = k, m.cfg.ClientTags[k]
			req.ClientTags = append(req.ClientTags, tag)
		}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		owned := emptyAssignment()
		m.sentOwned = &owned
		req.TaskOffsets, req.TaskEndOffsets = toTaskOffsets(m.offsets), toTaskOffsets(m.endOffsets)
		m.sentOffsets, m.sentEnd, m.offsetsSentAt = maps.Clone(m.offsets), maps.Clone(m.endOffsets), now
	} else {
		changed := m.sentOwned == nil || !m.sentOwned.Equal(m.current)
		if changed {
			req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = toTaskIDs(m.current.Active), toTaskIDs(m.current.Standby), toTaskIDs(m.current.Warmup)
			owned := m.current
			m.sentOwned = &owned
		}
		if changed || now.Sub(m.offsetsSentAt) >= m.offsetInterval || m.hotWarmup() {
			if !maps.Equal(m.offsets, m.sentOffsets) {
				req.TaskOffsets = toTaskOffsets(m.offsets)
				m.sentOffsets, m.offsetsSentAt = maps.Clone(m.offsets), now
			}
			if !maps.Equal(m.endOffsets, m.sentEnd) {
				req.TaskEndOffsets = toTaskOffsets(m.endOffsets)
				m.sentEnd, m.offsetsSentAt = maps.Clone(m.endOffsets), now
			}
		}
		if m.state == stateAcknowledging {
			// The acknowledgement is on its way: what is left to reconcile is the next step.
			if m.target.Equal(m.current) {
				m.state = stateStable
			} else {
				m.state = stateReconciling
				m.reconcileLocked()
			}
		}
	}
	req.ShutdownApplication, m.urgent = m.shutdown, false
	return req, joining
}

// hotWarmup reports whether a warmup task has caught up (its lag within the broker's
// acceptable recovery lag): its offsets go out without waiting for the interval, so that
// the broker can make it active.
func (m *StreamsMember) hotWarmup() bool {
	if m.recoveryLag < 0 {
		return false
	}
	for _, t := range m.current.Warmup {
		off, ok1 := m.offsets[t]
		end, ok2 := m.endOffsets[t]
		if ok1 && ok2 && end-off <= m.recoveryLag {
			return true
		}
	}
	return false
}

func (m *StreamsMember) resetSent() {
	m.mu.Lock()
	m.sentOwned, m.sentOffsets, m.sentEnd = nil, nil, nil
	m.mu.Unlock()
}

// handleError acts on a heartbeat's error code: nil when there is none, a fatal error for
// those Kafka Streams gives up on, a plain error for those it retries.
func (m *StreamsMember) handleError(hr *kmsg.StreamsGroupHeartbeatResponse, joining bool) error {
	err := errorFor(hr.ErrorCode, hr.ErrorMessage)
	if err == nil {
		return nil
	}
	m.resetSent()
	switch {
	case errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorNotAvailable):
		m.conn.forget()
		return err
	case errors.Is(err, kerr.CoordinatorLoadInProgress):
		return err
	case errors.Is(err, kerr.FencedMemberEpoch), errors.Is(err, kerr.UnknownMemberID):
		m.fenced(err)
		return nil
	case errors.Is(err, kerr.UnreleasedInstanceID):
		// The instance id is still held by this agent's previous member (a crash, no leave):
		// the broker frees it when that member's session expires. Kafka Streams stops here;
		// an agent that restarts after a crash waits instead of crash-looping.
		return fmt.Errorf("group.instance.id %q is still held by a previous member that did not leave; "+
			"the broker frees it when that member's session (streams.session.timeout.ms) expires: %w", m.cfg.InstanceID, err)
	case errors.Is(err, kerr.UnsupportedVersion):
		return fatal(m.conn.unsupportedNow(err))
	case errors.Is(err, kerr.InvalidRequest) && joining && hr.ErrorMessage != nil && *hr.ErrorMessage == "Topology updates are not supported yet.":
		return fatal(fmt.Errorf("%w: the broker refused this member's topology (%v); the group's topology was declared "+
			"by another member: run the same topology, or use another application.id", ErrTopologyMismatch, err))
	case errors.Is(err, kerr.FencedInstanceID):
		return fatal(fmt.Errorf("streams group %s: another member joined with group.instance.id %q: %w", m.cfg.Group, m.cfg.InstanceID, err))
	}
	return fatal(fmt.Errorf("streams group %s: heartbeat: %w", m.cfg.Group, err))
}

// fenced: the broker no longer knows the member at its epoch. Its tasks are lost; it joins
// again once the application let go of them.
func (m *StreamsMember) fenced(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == stateLeaving || m.state == stateLeft {
		return
	}
	m.log.Info("fenced by the group; dropping every task and joining again", "epoch", m.epoch, "error", err)
	m.epoch = joinEpoch
	m.target = emptyAssignment()
	m.seq++
	if m.current.Empty() && (m.pending == nil || m.pending.Lost) {
		// Nothing to drop: join at once.
		m.pending = nil
		m.current = emptyAssignment()
		m.joinLocked()
		return
	}
	m.state, m.rejoin = stateFenced, true
	m.pending = &Reconciliation{Lost: true, Target: emptyAssignment(), seq: m.seq}
	m.signal()
}

// handle takes a successful heartbeat's answer.
func (m *StreamsMember) handle(hr *kmsg.StreamsGroupHeartbeatResponse) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.interval = time.Duration(hr.HeartbeatIntervalMillis) * time.Millisecond
	m.offsetInterval = time.Duration(hr.TaskOffsetIntervalMillis) * time.Millisecond
	if hr.Version >= 1 {
		m.recoveryLag = hr.AcceptableRecoveryLag
	}
	m.endpointEpoch = hr.EndpointInformationEpoch
	if hr.PartitionsByUserEndpoint != nil {
		m.endpoints = indexEndpoints(hr.PartitionsByUserEndpoint)
	}
	if err := m.statusesLocked(hr.Status); err != nil {
		return err
	}
	if m.state == stateLeaving || m.state == stateFenced || hr.MemberEpoch < 0 {
		return nil
	}
	m.epoch = hr.MemberEpoch
	ready := groupReady(m.statuses)
	switch {
	case hr.ActiveTasks != nil && hr.StandbyTasks != nil && hr.WarmupTasks != nil:
		var target Assignment
		var err error
		if target.Active, err = fromTaskIDs(hr.ActiveTasks); err == nil {
			if target.Standby, err = fromTaskIDs(hr.StandbyTasks); err == nil {
				target.Warmup, err = fromTaskIDs(hr.WarmupTasks)
			}
		}
		if err != nil {
			return fatal(err)
		}
		m.assignLocked(target, ready)
	case hr.ActiveTasks != nil || hr.StandbyTasks != nil || hr.WarmupTasks != nil:
		return fatal(errors.New("invalid heartbeat response: the task lists must be all null or all set"))
	case m.state == stateJoining:
		m.state = stateStable
	}
	// Readiness alone changes no task: it is only reported (Ready), so that a reconciliation
	// the application has not carried out yet does not hold back the next one.
	m.ready = ready
	return nil
}

// assignLocked takes the broker's assignment.
func (m *StreamsMember) assignLocked(target Assignment, ready bool) {
	changed := !target.Equal(m.target)
	m.target, m.ready = target, ready
	if target.Equal(m.current) && m.pending == nil {
		if m.state == stateJoining || m.state == stateReconciling {
			m.state = stateStable
		}
		if !changed {
			return
		}
	}
	if m.state != stateAcknowledging {
		m.state = stateReconciling
	}
	if m.pending == nil && m.state == stateReconciling {
		m.reconcileLocked()
	}
}

// reconcileLocked hands the application the step from what it runs to the broker's
// assignment.
func (m *StreamsMember) reconcileLocked() {
	m.seq++
	m.pending = &Reconciliation{Revoke: minus(m.current.Active, m.target.Active), Target: m.target, Ready: m.ready, seq: m.seq}
	m.log.Info("new task assignment", "target", m.target, "revoke", m.pending.Revoke, "ready", m.ready)
	m.signal()
}

// statusesLocked keeps the group's statuses and stops the member on those Kafka Streams
// stops on: SHUTDOWN_APPLICATION, INCORRECTLY_PARTITIONED_TOPICS, and
// MISSING_SOURCE_TOPICS lasting more than two heartbeat intervals.
func (m *StreamsMember) statusesLocked(list []kmsg.StreamsGroupHeartbeatResponseStatus) error {
	// A new slice: Statuses handed the old one out.
	m.statuses = nil
	missing := ""
	for _, s := range list {
		gs := GroupStatus{Code: s.StatusCode, Detail: s.StatusDetail}
		m.statuses = append(m.statuses, gs)
		switch s.StatusCode {
		case StatusShutdownApplication:
			return fatal(fmt.Errorf("%w: %s", ErrApplicationShutdown, s.StatusDetail))
		case StatusIncorrectlyPartitionedTopics:
			return fatal(fmt.Errorf("streams group %s: %w: %s", m.cfg.Group, ErrIncorrectlyPartitioned, s.StatusDetail))
		case StatusMissingSourceTopics:
			missing = s.StatusDetail
		default:
			m.log.Info("streams group status", "status", gs.String())
		}
	}
	if missing == "" {
		m.missingSince = time.Time{}
		return nil
	}
	wait := 2 * m.interval
	if m.missingSince.IsZero() {
		m.missingSince = time.Now()
		m.log.Info("missing source topics; waiting before failing", "detail", missing, "wait", wait)
		return nil
	}
	if elapsed := time.Since(m.missingSince); elapsed > wait {
		return fatal(fmt.Errorf("streams group %s: %w: %s (timeout exceeded after %dms)", m.cfg.Group, ErrMissingSourceTopics, missing, elapsed.Milliseconds()))
	}
	return nil
}

// groupReady is false while the broker cannot assign tasks yet.
func groupReady(statuses []GroupStatus) bool {
	for _, s := range statuses {
		switch s.Code {
		case StatusMissingSourceTopics, StatusMissingInternalTopics, StatusIncorrectlyPartitionedTopics, StatusAssignmentDelayed:
			return false
		}
	}
	return true
}

// leave sends the leave heartbeat once; its answer is only logged.
func (m *StreamsMember) leave() {
	m.mu.Lock()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.cfg.Group, m.memberID, m.epoch
	req.EndpointInformationEpoch = m.endpointEpoch
	if m.cfg.InstanceID != "" {
		req.InstanceID = kmsg.StringPtr(m.cfg.InstanceID)
	}
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.RequestTimeout)
	defer cancel()
	resp, err := m.conn.request(ctx, req)
	if err == nil {
		hr := resp.(*kmsg.StreamsGroupHeartbeatResponse)
		err = errorFor(hr.ErrorCode, hr.ErrorMessage)
	}
	if err != nil {
		m.log.Warn("leaving the streams group failed; the broker removes the member when its session expires", "error", err)
	} else {
		m.log.Info("left the streams group", "epoch", req.MemberEpoch)
	}
	m.mu.Lock()
	m.state = stateLeft
	m.mu.Unlock()
}

// splitEndpoint reads application.server's host:port.
func splitEndpoint(s string) (string, uint16, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || host == "" {
		return "", 0, fmt.Errorf("%q is not host:port", s)
	}
	return host, uint16(p), nil
}

func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// randomMemberID is a member id as Kafka's Uuid#toString writes one: 16 random bytes in
// URL-safe base64.
func randomMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// RandomUUID is a random (version 4) UUID as java.util.UUID writes it.
func RandomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
