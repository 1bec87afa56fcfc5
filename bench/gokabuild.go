package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildGoka builds the goka scenario processes' executable (bench/goka, a module of its own
// so that the product's go.mod does not carry goka) into dir and returns its path and the
// goka version it holds.
func buildGoka(dir string) (exe, version string, err error) {
	root, err := moduleDir()
	if err != nil {
		return "", "", err
	}
	src := filepath.Join(root, "bench", "goka")
	goIn := func(args ...string) ([]byte, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = src
		// A go.work above the checkout must not pull the module into a workspace it is not in.
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return nil, fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), src, err, out)
		}
		return out, nil
	}
	exe = filepath.Join(dir, "bench-goka")
	if _, err := goIn("build", "-o", exe, "."); err != nil {
		return "", "", err
	}
	v, err := goIn("list", "-m", "-f", "{{.Version}}", "github.com/lovoo/goka")
	if err != nil {
		return "", "", err
	}
	return exe, strings.TrimSpace(string(v)), nil
}

// moduleDir is the product's module directory, where bench/'s other sources are.
func moduleDir() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the product's module (go list -m): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
