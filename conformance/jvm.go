package conformance

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// JVM runs the Java side: conformance/java's Main, built by Maven (make conformance).
type JVM struct {
	// JavaDir is conformance/java; its target/ holds the classes and classpath.txt.
	JavaDir string
	// Threads are the runner's worker threads.
	Threads int
}

// Start writes the inputs to dir and starts the JVM on them; wait returns its results.
func (j JVM) Start(dir string, ins []Input) (wait func() ([]*Result, error), err error) {
	cp, err := os.ReadFile(filepath.Join(j.JavaDir, "target", "classpath.txt"))
	if err != nil {
		return nil, fmt.Errorf("the Java side is not built (make conformance builds it): %w", err)
	}
	inPath, outPath := filepath.Join(dir, "inputs.txt"), filepath.Join(dir, "results.txt")
	f, err := os.Create(inPath)
	if err != nil {
		return nil, err
	}
	if err := WriteInputs(f, ins); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	classpath := filepath.Join(j.JavaDir, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(cp))
	cmd := exec.Command("java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath,
		"stoatflow.conformance.Main", inPath, outPath, strconv.Itoa(max(j.Threads, 1)))
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting java: %w", err)
	}
	return func() ([]*Result, error) {
		if err := cmd.Wait(); err != nil {
			return nil, fmt.Errorf("java: %w\n%s", err, stderr.String())
		}
		f, err := os.Open(outPath)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return ReadResults(f)
	}, nil
}
