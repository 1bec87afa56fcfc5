package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// machineIn drives a fresh machine to s along valid transitions.
func machineIn(t *testing.T, s AppState) *StateMachine {
	t.Helper()
	paths := map[AppState][]AppState{
		StateCreated:         nil,
		StateRebalancing:     {StateRebalancing},
		StateRunning:         {StateRebalancing, StateRunning},
		StatePendingShutdown: {StatePendingShutdown},
		StateNotRunning:      {StatePendingShutdown, StateNotRunning},
		StatePendingError:    {StateRebalancing, StatePendingError},
		StateError:           {StateRebalancing, StatePendingError, StateError},
		StateStandby:         {StateRebalancing, StateStandby},
	}
	m := NewStateMachine(nil)
	for _, step := range paths[s] {
		if err := m.Transition(step); err != nil {
			t.Fatalf("driving to %s: %v", s, err)
		}
	}
	if m.Current() != s {
		t.Fatalf("drove to %s, got %s", s, m.Current())
	}
	return m
}

func TestTransitionsFollowKafkaStreams(t *testing.T) {
	// Kafka Streams' KafkaStreams.State table, written out as pairs.
	allowed := map[[2]AppState]bool{
		{StateCreated, StateRebalancing}:         true,
		{StateCreated, StatePendingShutdown}:     true,
		{StateRebalancing, StateRunning}:         true,
		{StateRebalancing, StatePendingShutdown}: true,
		{StateRebalancing, StatePendingError}:    true,
		{StateRebalancing, StateRebalancing}:     true, // ignored, as Kafka Streams does
		{StateRunning, StateRebalancing}:         true,
		{StateRunning, StateRunning}:             true,
		{StateRunning, StatePendingShutdown}:     true,
		{StateRunning, StatePendingError}:        true,
		{StatePendingShutdown, StateNotRunning}:  true,
		{StatePendingError, StateError}:          true,
		// STANDBY is StoatFlow's: entered and left like RUNNING, never to RUNNING directly.
		{StateRebalancing, StateStandby}:     true,
		{StateStandby, StateRebalancing}:     true,
		{StateStandby, StatePendingShutdown}: true,
		{StateStandby, StatePendingError}:    true,
	}
	for _, from := range AllStates {
		for _, to := range AllStates {
			m := machineIn(t, from)
			err := m.Transition(to)
			if allowed[[2]AppState{from, to}] {
				if err != nil {
					t.Errorf("%s → %s: %v", from, to, err)
				}
				if m.Current() != to {
					t.Errorf("%s → %s: now %s", from, to, m.Current())
				}
				continue
			}
			if !errors.Is(err, ErrInvalidTransition) {
				t.Errorf("%s → %s: err = %v, want ErrInvalidTransition", from, to, err)
				continue
			}
			if !strings.Contains(err.Error(), from.String()) || !strings.Contains(err.Error(), to.String()) {
				t.Errorf("%s → %s: error %q does not name both states", from, to, err)
			}
			if m.Current() != from {
				t.Errorf("%s → %s refused but state moved to %s", from, to, m.Current())
			}
		}
	}
}

func TestStateNames(t *testing.T) {
	want := []string{"CREATED", "REBALANCING", "RUNNING", "PENDING_SHUTDOWN", "NOT_RUNNING", "PENDING_ERROR", "ERROR", "STANDBY"}
	for i, s := range AllStates {
		if s.String() != want[i] {
			t.Errorf("state %d = %q, want %q", i, s, want[i])
		}
	}
	if got := AppState(42).String(); got != "AppState(42)" {
		t.Errorf("out of range state = %q", got)
	}
}

func TestOnChangeSeesEveryChangeInOrder(t *testing.T) {
	var got []string
	m := NewStateMachine(func(old, new AppState) { got = append(got, old.String()+">"+new.String()) })
	for _, s := range []AppState{StateRebalancing, StateRebalancing, StateRunning, StatePendingShutdown, StateNotRunning} {
		if err := m.Transition(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Transition(StateRunning); err == nil {
		t.Fatal("NOT_RUNNING → RUNNING accepted")
	}
	want := "CREATED>REBALANCING REBALANCING>RUNNING RUNNING>PENDING_SHUTDOWN PENDING_SHUTDOWN>NOT_RUNNING"
	if strings.Join(got, " ") != want {
		t.Fatalf("onChange calls = %v, want %s", got, want)
	}
}

func TestConcurrentTransitionsKeepGaugeConsistent(t *testing.T) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "state"}, []string{"state"})
	m := NewStateMachine(StateGauge(g))
	if err := m.Transition(StateRebalancing); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				if (i+j)%2 == 0 {
					_ = m.Transition(StateRunning)
				} else {
					_ = m.Transition(StateRebalancing)
				}
				_ = m.Current()
			}
		})
	}
	wg.Wait()
	cur := m.Current()
	for _, s := range AllStates {
		want := 0.0
		if s == cur {
			want = 1
		}
		if got := testutil.ToFloat64(g.WithLabelValues(s.String())); got != want {
			t.Errorf("gauge{state=%s} = %v with current %s", s, got, cur)
		}
	}
}

func TestStateGaugeStartsAtCreated(t *testing.T) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "state"}, []string{"state"})
	StateGauge(g)
	if got := testutil.ToFloat64(g.WithLabelValues("CREATED")); got != 1 {
		t.Errorf("CREATED = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(g); n != len(AllStates) {
		t.Errorf("gauge has %d series, want one per state (%d)", n, len(AllStates))
	}
}

func TestWaitForReturnsWhenStateReached(t *testing.T) {
	m := NewStateMachine(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		s, err := m.WaitFor(ctx, StateRunning)
		if err == nil && s != StateRunning {
			err = errors.New("returned " + s.String())
		}
		done <- err
	}()
	for _, s := range []AppState{StateRebalancing, StateRunning} {
		if err := m.Transition(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s, err := m.WaitFor(ctx, StateRebalancing, StateRunning); err != nil || s != StateRunning {
		t.Fatalf("WaitFor in a wanted state = %s, %v", s, err)
	}
}

func TestWaitForFailsOnContextAndFinalState(t *testing.T) {
	m := NewStateMachine(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.WaitFor(ctx, StateRunning); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: err = %v", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := m.WaitFor(ctx, StateRunning)
		done <- err
	}()
	for _, s := range []AppState{StateRebalancing, StatePendingError, StateError} {
		if err := m.Transition(s); err != nil {
			t.Fatal(err)
		}
	}
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "ERROR") || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait ended by ERROR: err = %v", err)
	}
}
