package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildGoka builds the goka scenario processes' executable (bench/goka, a module of its own
// so that the product's go.mod does not carry goka) into dir and returns its path.
func buildGoka(dir string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the product's module (go list -m): %w", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "bench", "goka")
	exe := filepath.Join(dir, "bench-goka")
	cmd := exec.Command("go", "build", "-o", exe, ".")
	cmd.Dir = src
	// A go.work above the checkout must not pull the module into a workspace it is not in.
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", src, err, out)
	}
	return exe, nil
}
