// An agent run as a process of its own (the test binary run again, crash_test.go's
// TestMain), for tests that kill, freeze or stop it, or the brokers under it.

package agent

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// replicaProcess is an agent process: one of a three-agent application, or one running
// while the brokers fail under it.
type replicaProcess struct {
	config string    // path of its agent.toml
	addr   string    // its HTTP listener and application.server
	stderr io.Writer // its log; nil: the test's stderr
	cmd    *exec.Cmd
}

func (p *replicaProcess) start(t *testing.T) {
	t.Helper()
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), "STOATFLOW_TEST_AGENT_CONFIG="+p.config)
	p.cmd.Stderr = cmp.Or(p.stderr, io.Writer(os.Stderr))
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

// state is the application state the process's /readyz names, "" while it does not answer.
func (p *replicaProcess) state() string { return p.readyz().State }

// readyzBody is what a test reads of /readyz's body.
type readyzBody struct {
	State       string
	ActiveHosts []string
}

// readyz is the process's /readyz body, zero while it does not answer.
func (p *replicaProcess) readyz() readyzBody {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + p.addr + "/readyz")
	if err != nil {
		return readyzBody{}
	}
	defer resp.Body.Close()
	var body readyzBody
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return readyzBody{}
	}
	return body
}

// freeAddr is a loopback address with a port free a moment ago, for an agent process
// whose bound address the test cannot ask.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// tasks is how many tasks the process's workers run (stoatflow_thread_tasks), -1 while it
// does not answer.
func (p *replicaProcess) tasks() int {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + p.addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "stoatflow_thread_tasks{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return -1
		}
		n += int(v)
	}
	return n
}

// statusTasks is how many tasks the process's GET /v1/status lists, -1 while it does not
// answer.
func (p *replicaProcess) statusTasks() int {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + p.addr + "/v1/status")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var body struct{ Tasks map[string]any }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
		return -1
	}
	return len(body.Tasks)
}
