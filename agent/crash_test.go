package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/stoatflow/stoatflow/agent/config"
)

// TestMain lets a test start this binary as an agent process (to kill it with SIGKILL), and
// closes the Chromium the browser tests share.
func TestMain(m *testing.M) {
	if path := os.Getenv("STOATFLOW_TEST_AGENT_CONFIG"); path != "" {
		os.Exit(runAgentProcess(path))
	}
	code := m.Run()
	closeChromium()
	os.Exit(code)
}

func runAgentProcess(path string) int {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if cfg.NumStreamThreads == 1 {
		cfg.NumStreamThreads = testThreads()
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := New(cfg, Options{Logger: logger, Stdout: io.Discard})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := a.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
