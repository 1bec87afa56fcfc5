package agent

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func groupMembers(t *testing.T, brokers []string, group string) int {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	groups, err := admin.DescribeConsumerGroups([]string{group})
	if err != nil {
		t.Fatal(err)
	}
	return len(groups[0].Members)
}

func postClose(t *testing.T, ra *runningAgent, body string) int {
	t.Helper()
	addr, _ := ra.a.HTTPAddr(context.Background())
	resp, err := http.Post("http://"+addr+"/v1/close", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func waitStopped(t *testing.T, ra *runningAgent) {
	t.Helper()
	select {
	case err := <-ra.done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not stop after POST /v1/close")
	}
}

// A close over HTTP shuts the agent down; LEAVE_GROUP makes the static member leave at once,
// REMAIN_IN_GROUP (Kafka Streams' classic default) keeps it until its session times out.
func TestCloseOverHTTPWithGroupMembershipOperation(t *testing.T) {
	closeOverHTTPWithGroupMembershipOperation(t, onKfake(t, 1, "in", "out"))
}

func closeOverHTTPWithGroupMembershipOperation(t *testing.T, b *brokerUnderTest) {
	brokers := b.brokers
	cfg := b.config(t, upperScript, "")
	ra := startAgent(t, cfg)
	if code := postClose(t, ra, `{"operation": "SOMETIMES"}`); code != http.StatusBadRequest {
		t.Fatalf("bad operation: status %d", code)
	}
	if code := postClose(t, ra, `{"operation": "REMAIN_IN_GROUP"}`); code != http.StatusAccepted {
		t.Fatalf("status %d", code)
	}
	waitStopped(t, ra)
	if n := groupMembers(t, brokers, cfg.ApplicationID); n != 1 {
		t.Fatalf("REMAIN_IN_GROUP: %d members, want the static member to stay", n)
	}

	ra = startAgent(t, cfg)
	if code := postClose(t, ra, `{"operation": "LEAVE_GROUP"}`); code != http.StatusAccepted {
		t.Fatalf("status %d", code)
	}
	waitStopped(t, ra)
	if n := groupMembers(t, brokers, cfg.ApplicationID); n != 0 {
		t.Fatalf("LEAVE_GROUP: %d members, want none", n)
	}
}
