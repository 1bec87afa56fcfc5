package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// AppState is the application's lifecycle state, named and ordered as Kafka Streams'
// KafkaStreams.State so operators and scripts see the values they know. STANDBY, last, is
// StoatFlow's own: another agent of the application is active and this one waits, ready to
// take over (a Kafka Streams instance with only standby tasks is RUNNING).
type AppState int

const (
	StateCreated AppState = iota
	StateRebalancing
	StateRunning
	StatePendingShutdown
	StateNotRunning
	StatePendingError
	StateError
	StateStandby
)

var stateNames = [...]string{
	StateCreated:         "CREATED",
	StateRebalancing:     "REBALANCING",
	StateRunning:         "RUNNING",
	StatePendingShutdown: "PENDING_SHUTDOWN",
	StateNotRunning:      "NOT_RUNNING",
	StatePendingError:    "PENDING_ERROR",
	StateError:           "ERROR",
	StateStandby:         "STANDBY",
}

// AllStates lists every state in declaration order.
var AllStates = []AppState{
	StateCreated, StateRebalancing, StateRunning, StatePendingShutdown,
	StateNotRunning, StatePendingError, StateError, StateStandby,
}

// validTransitions is KafkaStreams.State's table: CREATED(1, 3), REBALANCING(2, 3, 5),
// RUNNING(1, 2, 3, 5), PENDING_SHUTDOWN(4), NOT_RUNNING, PENDING_ERROR(6), ERROR, with
// STANDBY(7) entered from REBALANCING like RUNNING and left like it: STANDBY(1, 3, 5).
// Only RUNNING may move to itself; REBALANCING → REBALANCING is handled in Transition.
var validTransitions = map[AppState][]AppState{
	StateCreated:         {StateRebalancing, StatePendingShutdown},
	StateRebalancing:     {StateRunning, StatePendingShutdown, StatePendingError, StateStandby},
	StateRunning:         {StateRebalancing, StateRunning, StatePendingShutdown, StatePendingError},
	StateStandby:         {StateRebalancing, StatePendingShutdown, StatePendingError},
	StatePendingShutdown: {StateNotRunning},
	StatePendingError:    {StateError},
}

func (s AppState) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("AppState(%d)", int(s))
	}
	return stateNames[s]
}

// IsTerminal reports whether no transition leaves s.
func (s AppState) IsTerminal() bool { return len(validTransitions[s]) == 0 }

func (s AppState) canMoveTo(to AppState) bool {
	for _, v := range validTransitions[s] {
		if v == to {
			return true
		}
	}
	return false
}

// ErrInvalidTransition is wrapped by every error Transition returns, so callers that race
// with a shutdown (a failing thread asking for PENDING_ERROR after PENDING_SHUTDOWN) can
// recognise the refusal with errors.Is.
var ErrInvalidTransition = errors.New("invalid application state transition")

// StateMachine holds the current AppState; it is safe for concurrent use.
type StateMachine struct {
	mu       sync.Mutex
	current  AppState
	changed  chan struct{} // closed and replaced on every change, waking all waiters
	onChange func(old, new AppState)
	// reason says why the application is not RUNNING (a broker that does not answer, a
	// rejoin after fencing); GET /readyz shows it. Entering RUNNING clears it.
	reason string
}

// NewStateMachine starts in CREATED. onChange (may be nil) runs on every change, in
// transition order, while the state is locked: it must be quick and must not call the
// StateMachine's methods (its arguments carry the states).
func NewStateMachine(onChange func(old, new AppState)) *StateMachine {
	return &StateMachine{current: StateCreated, changed: make(chan struct{}), onChange: onChange}
}

// Current returns the state now.
func (m *StateMachine) Current() AppState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current
}

// Transition moves to state to, or returns an error wrapping ErrInvalidTransition that names
// both states. REBALANCING → REBALANCING (a second rebalance before the first completed) is
// accepted without a change, as Kafka Streams ignores it.
func (m *StateMachine) Transition(to AppState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	from := m.current
	if from == StateRebalancing && to == StateRebalancing {
		return nil
	}
	if !from.canMoveTo(to) {
		return fmt.Errorf("%w from %s to %s", ErrInvalidTransition, from, to)
	}
	m.current = to
	if to == StateRunning {
		m.reason = ""
	}
	close(m.changed)
	m.changed = make(chan struct{})
	// Under the lock, so observers (the state gauge, logs) see changes in the order they
	// happened even when two goroutines race to change the state.
	if m.onChange != nil {
		m.onChange(from, to)
	}
	return nil
}

// SetReason records why the application is not RUNNING; "" clears it.
func (m *StateMachine) SetReason(reason string) {
	m.mu.Lock()
	m.reason = reason
	m.mu.Unlock()
}

// CurrentWithReason is the current state and the reason last set for it.
func (m *StateMachine) CurrentWithReason() (AppState, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.current, m.reason
}

// WaitFor blocks until the state is one of want and returns it. It fails when ctx ends, or
// when the machine reaches a terminal state that is not wanted, since it can never leave it.
func (m *StateMachine) WaitFor(ctx context.Context, want ...AppState) (AppState, error) {
	for {
		m.mu.Lock()
		cur, changed := m.current, m.changed
		m.mu.Unlock()
		for _, w := range want {
			if cur == w {
				return cur, nil
			}
		}
		if cur.IsTerminal() {
			return cur, fmt.Errorf("waiting for state %v: application reached %s, which is final", want, cur)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return cur, fmt.Errorf("waiting for state %v (now %s): %w", want, cur, context.Cause(ctx))
		}
	}
}

// StateGauge returns an onChange hook that keeps g (label state, e.g. metrics.AppState) at 1
// for the current state and 0 for the others. It sets CREATED at once, the state every
// StateMachine starts in. The hook rewrites every state's series, so it stays right even
// if it misses a change.
func StateGauge(g *prometheus.GaugeVec) func(old, new AppState) {
	set := func(current AppState) {
		for _, s := range AllStates {
			v := 0.0
			if s == current {
				v = 1
			}
			g.WithLabelValues(s.String()).Set(v)
		}
	}
	set(StateCreated)
	return func(_, new AppState) { set(new) }
}
