package kafkatest

import (
	"slices"
	"testing"
)

// A cluster's directory in a shared one names its shape, its brokers' JVM included: a
// benchmark's broker is never a test's.
func TestSpecName(t *testing.T) {
	for spec, want := range map[Spec]string{
		{}:                                    "n1-tv2",
		{Nodes: 3, TransactionVersion: 1}:     "n3-tv1",
		{Nodes: 1, Server: true}:              "n1-tv2-server",
		{Nodes: 3, TransactionVersion: 2}:     "n3-tv2",
		{TransactionVersion: 1, Server: true}: "n1-tv1-server",
	} {
		if got := spec.Name(); got != want {
			t.Errorf("%+v: %q, want %q", spec, got, want)
		}
	}
}

func TestServerJVMOptionsAreABrokersOwn(t *testing.T) {
	opts := ServerJVMOptions()
	for _, want := range []string{"-Xmx1g", "-XX:+UseG1GC"} {
		if !slices.Contains(opts, want) {
			t.Errorf("%v lacks %s", opts, want)
		}
	}
	if slices.Contains(opts, "-XX:TieredStopAtLevel=1") {
		t.Errorf("%v stops at the client compiler", opts)
	}
	opts[0] = "changed"
	if ServerJVMOptions()[0] == "changed" {
		t.Error("ServerJVMOptions hands out its own slice")
	}
}

// TestNewClusterIDNeverStartsWithADash: kafka-storage format reads an ID starting with '-'
// as an option and fails, so no cluster ID may start so (1 in 64 random ones would).
func TestNewClusterIDNeverStartsWithADash(t *testing.T) {
	for range 5000 {
		id, err := newClusterID()
		if err != nil {
			t.Fatal(err)
		}
		if len(id) != 22 || id[0] == '-' {
			t.Fatalf("cluster ID %q: want 22 characters of URL base64, not starting with '-'", id)
		}
	}
}
