package kafkaio

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/IBM/sarama"
)

// ActiveStrategyName is the group protocol of StoatFlow agents. The engine's single-instance
// semantics (in-memory repartitioning, one global watermark) hold only if one member
// processes every source partition, so the strategy gives them all to one member, the
// active; the other members are standbys and get none. A member that offers only another
// protocol (an older agent, a plain consumer) cannot join the group: the broker answers it
// INCONSISTENT_GROUP_PROTOCOL rather than splitting the partitions. The version in the name
// changes when the metadata below changes incompatibly.
const ActiveStrategyName = "stoatflow-active-v1"

// MemberState is what a member tells the group leader about itself on every join.
type MemberState struct {
	// InstanceID names the member to the others (its group.instance.id).
	InstanceID string
	// Host is the member's application.server, "" when it has none.
	Host string
	// Position is how far the member's local state follows the changelogs: the sum, over
	// every changelog partition, of the next offset its state would read. Every member
	// follows the same changelogs, so the largest position is the most caught-up member.
	Position int64
}

// GroupRole is what the leader decided for this member in its latest generation.
type GroupRole struct {
	Generation int32
	Active     bool
	// Warm is set for a standby among the num.standby.replicas most caught-up ones: it
	// keeps its state following the changelogs. The others stay cold.
	Warm bool
	// ActiveInstance and ActiveHost name the generation's active member.
	ActiveInstance string
	ActiveHost     string
	// StandbyHosts are the hosts (application.server) of the generation's warm standbys
	// that have one: Kafka Streams' standbyHosts of KeyQueryMetadata. A leader of an older
	// version sends none.
	StandbyHosts []string
}

// ActiveStrategy is a sarama balance strategy with sticky, lag-aware choice of the active
// member. A member carries in its subscription UserData the generation in which it was
// last made active, the latest generation it saw and its changelog position. The leader
// keeps the member that was active in the latest generation anyone saw; when there is none
// (the active left or its session timed out), it makes the most caught-up member active.
// Every member is told its role, and who is active, in its assignment's UserData.
//
// One ActiveStrategy serves one consumer; its methods are safe for concurrent use.
type ActiveStrategy struct {
	standbys int
	self     func() MemberState

	mu        sync.Mutex
	activeGen int32 // generation in which this member was last made active; -1 if not
	seenGen   int32 // latest generation this member was in; -1 before the first
	role      GroupRole
	roleErr   error
	planned   map[string]GroupRole // the leader's decision, from Plan to AssignmentData
}

var (
	_ sarama.SubscriptionUserDataBalanceStrategy = (*ActiveStrategy)(nil)
	_ sarama.OnAssignmentBalanceStrategy         = (*ActiveStrategy)(nil)
)

// NewActiveStrategy makes the strategy of one member. standbys is num.standby.replicas:
// how many standbys keep warm state. self reports the member's state at each join; it is
// called on sarama's goroutine and must be quick.
func NewActiveStrategy(standbys int, self func() MemberState) *ActiveStrategy {
	return &ActiveStrategy{standbys: standbys, self: self, activeGen: -1, seenGen: -1}
}

// Use makes the strategy the only one of a consumer config, the config of its member.
func (s *ActiveStrategy) Use(cfg *Config) {
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{s}
}

// Name implements sarama.BalanceStrategy.
func (s *ActiveStrategy) Name() string { return ActiveStrategyName }

// Role returns this member's role in its latest generation, and an error when the
// assignment could not be read (the member then acts as a cold standby).
func (s *ActiveStrategy) Role() (GroupRole, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.role, s.roleErr
}

// memberData is a member's subscription UserData.
type memberData struct {
	activeGen, seenGen int32
	state              MemberState
}

const (
	memberDataVersion     = 1
	assignmentDataVersion = 1
)

// Role codes in the assignment's UserData.
const (
	roleActive byte = iota
	roleWarm
	roleCold
)

// SubscriptionUserData implements sarama.SubscriptionUserDataBalanceStrategy.
func (s *ActiveStrategy) SubscriptionUserData([]string) ([]byte, error) {
	st := s.self()
	s.mu.Lock()
	d := memberData{activeGen: s.activeGen, seenGen: s.seenGen, state: st}
	s.mu.Unlock()
	return d.encode(), nil
}

// Plan implements sarama.BalanceStrategy: every partition of every topic the active
// subscribes to goes to the active; every other member gets an empty assignment, which
// still carries its role.
func (s *ActiveStrategy) Plan(members map[string]sarama.ConsumerGroupMemberMetadata, topics map[string][]int32) (sarama.BalanceStrategyPlan, error) {
	type candidate struct {
		id   string
		data memberData
		meta sarama.ConsumerGroupMemberMetadata
	}
	cands := make([]candidate, 0, len(members))
	latest := int32(-1)
	for id, meta := range members {
		d, err := decodeMemberData(meta.UserData)
		if err != nil {
			return nil, fmt.Errorf("%s: member %s: %w", ActiveStrategyName, id, err)
		}
		latest = max(latest, d.seenGen, d.activeGen)
		cands = append(cands, candidate{id: id, data: d, meta: meta})
	}
	if len(cands) == 0 {
		return sarama.BalanceStrategyPlan{}, nil
	}
	sticky := func(c candidate) bool { return c.data.activeGen >= 0 && c.data.activeGen == latest }
	slices.SortFunc(cands, func(a, b candidate) int {
		if sa, sb := sticky(a), sticky(b); sa != sb {
			if sa {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.data.state.Position, a.data.state.Position); c != 0 {
			return c
		}
		if c := cmp.Compare(a.data.state.InstanceID, b.data.state.InstanceID); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	active := cands[0]
	var warmHosts []string
	for i, c := range cands {
		if i > 0 && i <= s.standbys && c.data.state.Host != "" {
			warmHosts = append(warmHosts, c.data.state.Host)
		}
	}
	plan := sarama.BalanceStrategyPlan{}
	planned := make(map[string]GroupRole, len(cands))
	for i, c := range cands {
		r := GroupRole{Active: i == 0, Warm: i > 0 && i <= s.standbys,
			ActiveInstance: active.data.state.InstanceID, ActiveHost: active.data.state.Host, StandbyHosts: warmHosts}
		planned[c.id] = r
		plan[c.id] = map[string][]int32{}
	}
	for _, topic := range active.meta.Topics {
		if parts, ok := topics[topic]; ok {
			plan.Add(active.id, topic, parts...)
		}
	}
	s.mu.Lock()
	s.planned = planned
	s.mu.Unlock()
	return plan, nil
}

// AssignmentData implements sarama.BalanceStrategy: the role Plan chose for memberID.
func (s *ActiveStrategy) AssignmentData(memberID string, _ map[string][]int32, _ int32) ([]byte, error) {
	s.mu.Lock()
	r, ok := s.planned[memberID]
	s.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s: no plan for member %s", ActiveStrategyName, memberID)
	}
	code := roleCold
	switch {
	case r.Active:
		code = roleActive
	case r.Warm:
		code = roleWarm
	}
	b := []byte{assignmentDataVersion, code}
	b = appendString(b, r.ActiveInstance)
	b = appendString(b, r.ActiveHost)
	// Added after the fields of the first version, which readers of that version ignore.
	b = binary.BigEndian.AppendUint16(b, uint16(min(len(r.StandbyHosts), 0xffff)))
	for _, h := range r.StandbyHosts[:min(len(r.StandbyHosts), 0xffff)] {
		b = appendString(b, h)
	}
	return b, nil
}

// OnAssignment implements sarama.OnAssignmentBalanceStrategy; sarama calls it before the
// generation's session starts.
func (s *ActiveStrategy) OnAssignment(a *sarama.ConsumerGroupMemberAssignment, generation int32) {
	r, err := decodeAssignment(a.UserData)
	r.Generation = generation
	if err == nil && r.Active != (len(a.Topics) > 0) {
		err = fmt.Errorf("assignment of generation %d: role active=%v with %d topics", generation, r.Active, len(a.Topics))
	}
	if err != nil {
		// Never act as the active on an assignment that cannot be read.
		r = GroupRole{Generation: generation}
		err = fmt.Errorf("%s: %w", ActiveStrategyName, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.role, s.roleErr = r, err
	s.seenGen = generation
	s.activeGen = -1
	if r.Active {
		s.activeGen = generation
	}
}

func (d memberData) encode() []byte {
	b := make([]byte, 0, 1+4+4+8+4+len(d.state.InstanceID)+len(d.state.Host))
	b = append(b, memberDataVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(d.activeGen))
	b = binary.BigEndian.AppendUint32(b, uint32(d.seenGen))
	b = binary.BigEndian.AppendUint64(b, uint64(d.state.Position))
	b = appendString(b, d.state.InstanceID)
	return appendString(b, d.state.Host)
}

var errShortUserData = errors.New("user data ends early")

func decodeMemberData(b []byte) (memberData, error) {
	var d memberData
	if len(b) == 0 {
		return d, errors.New("no user data (not a StoatFlow agent?)")
	}
	if b[0] != memberDataVersion {
		return d, fmt.Errorf("user data version %d, this agent reads %d", b[0], memberDataVersion)
	}
	b = b[1:]
	if len(b) < 16 {
		return d, errShortUserData
	}
	d.activeGen = int32(binary.BigEndian.Uint32(b))
	d.seenGen = int32(binary.BigEndian.Uint32(b[4:]))
	d.state.Position = int64(binary.BigEndian.Uint64(b[8:]))
	b = b[16:]
	var err error
	if d.state.InstanceID, b, err = readString(b); err != nil {
		return d, err
	}
	if d.state.Host, _, err = readString(b); err != nil {
		return d, err
	}
	return d, nil
}

func decodeAssignment(b []byte) (GroupRole, error) {
	var r GroupRole
	if len(b) < 2 {
		return r, errors.New("assignment without StoatFlow user data")
	}
	if b[0] != assignmentDataVersion {
		return r, fmt.Errorf("assignment user data version %d, this agent reads %d", b[0], assignmentDataVersion)
	}
	switch b[1] {
	case roleActive:
		r.Active = true
	case roleWarm:
		r.Warm = true
	case roleCold:
	default:
		return r, fmt.Errorf("assignment role %d unknown", b[1])
	}
	rest := b[2:]
	var err error
	if r.ActiveInstance, rest, err = readString(rest); err != nil {
		return r, err
	}
	if r.ActiveHost, rest, err = readString(rest); err != nil {
		return r, err
	}
	if len(rest) == 0 {
		return r, nil // a leader that sends no standby hosts
	}
	if len(rest) < 2 {
		return r, errShortUserData
	}
	n := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	for range n {
		var h string
		if h, rest, err = readString(rest); err != nil {
			return r, err
		}
		r.StandbyHosts = append(r.StandbyHosts, h)
	}
	return r, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(min(len(s), 0xffff)))
	return append(b, s[:min(len(s), 0xffff)]...)
}

func readString(b []byte) (string, []byte, error) {
	if len(b) < 2 {
		return "", nil, errShortUserData
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b) < 2+n {
		return "", nil, errShortUserData
	}
	return string(b[2 : 2+n]), b[2+n:], nil
}
