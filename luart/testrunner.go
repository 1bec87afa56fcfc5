package luart

import (
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// TestOptions configure RunTests.
type TestOptions struct {
	// Run selects the tests whose name it matches; nil runs all.
	Run *regexp.Regexp
	// Verbose prints every test as it runs and passes, and the output of print() and
	// KStream:print() of the pipelines under test.
	Verbose bool
	// Out receives the report; nil is os.Stdout.
	Out io.Writer
	// Timeout is the time budget of one test function (and of loading a test file);
	// 0 is one minute.
	Timeout time.Duration
}

// DefaultTestTimeout is the time budget of one test function when TestOptions names none.
const DefaultTestTimeout = time.Minute

// RunTests runs the *_test.lua files found in paths (files, or directories searched
// recursively; scripts/ when paths is empty) and reports like go test: a "--- FAIL" line per
// failed test with its message, "=== RUN" and "--- PASS" lines too when verbose, and a last
// line "N passed, M failed". A file that fails to load counts as one failed test. err is set
// when a path cannot be read or no test file is found.
func RunTests(paths []string, opts TestOptions) (passed, failed int, err error) {
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTestTimeout
	}
	if len(paths) == 0 {
		paths = []string{"scripts"}
	}
	files, err := findTestFiles(paths)
	if err != nil {
		return 0, 0, err
	}
	if len(files) == 0 {
		return 0, 0, fmt.Errorf("no test files (*_test.lua) in %s", strings.Join(paths, ", "))
	}
	logOut, stdout := io.Discard, io.Discard
	if opts.Verbose {
		logOut, stdout = opts.Out, opts.Out
	}
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	selected, notRun := 0, 0
	reported := map[string]bool{} // script load errors reported as a failure already
	for _, f := range files {
		p, fl, n, nr := runTestFile(f, opts, log, stdout, reported)
		passed += p
		failed += fl
		selected += n
		notRun += nr
	}
	if selected == 0 && failed == 0 {
		fmt.Fprintln(opts.Out, "warning: no tests to run")
	}
	if notRun > 0 {
		fmt.Fprintf(opts.Out, "%d more test(s) stopped at a script that does not load, each reported once above\n", notRun)
	}
	fmt.Fprintf(opts.Out, "%d passed, %d failed\n", passed, failed)
	return passed, failed, nil
}

// findTestFiles lists the test files of paths: a named file as is, the *_test.lua files below
// a directory in lexical order; each file once.
// TestFilesOf finds the tests of scripts: beside each script NAME.lua, the files
// NAME_test.lua and NAME_*_test.lua. A script without one is in untested.
func TestFilesOf(scripts []string) (files, untested []string, err error) {
	seen := map[string]bool{}
	for _, script := range scripts {
		dir, name := filepath.Split(strings.TrimSuffix(script, ".lua"))
		entries, err := os.ReadDir(filepath.Clean(dir))
		if err != nil {
			return nil, nil, err
		}
		found := false
		for _, e := range entries {
			if n := e.Name(); !e.IsDir() && strings.HasPrefix(n, name+"_") && strings.HasSuffix(n, "_test.lua") {
				found = true
				if f := filepath.Join(dir, n); !seen[f] {
					seen[f] = true
					files = append(files, f)
				}
			}
		}
		if !found {
			untested = append(untested, script)
		}
	}
	return files, untested, nil
}

func findTestFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), "_test.lua") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		if !seen[abs] {
			seen[abs] = true
			out = append(out, abs)
		}
	}
	return out, nil
}

// runTestFile loads one file and runs its selected tests; selected counts them. A test
// that fails because the scripts its driver loads do not load is a failure the first time
// that load error comes up in the run (reported holds those); after that it is counted
// in notRun and reported as SKIP, so one broken script is one failure, not one per test.
func runTestFile(abs string, opts TestOptions, log *slog.Logger, stdout io.Writer, reported map[string]bool) (passed, failed, selected, notRun int) {
	start := time.Now()
	tf, f := loadTestFile(abs, opts.Timeout, log, stdout)
	if f != nil {
		report(opts.Out, "FAIL", displayName(abs), time.Since(start), f)
		return 0, 1, 0, 0
	}
	defer tf.close()
	if len(tf.tests) == 0 {
		report(opts.Out, "FAIL", tf.name, time.Since(start), &testFailure{message: tf.name + ": no tests (register them with t.test(name, function() ... end))"})
		return 0, 1, 0, 0
	}
	tests := slices.DeleteFunc(slices.Clone(tf.tests), func(t registeredTest) bool {
		return opts.Run != nil && !opts.Run.MatchString(t.name)
	})
	for _, t := range tests {
		name := tf.name + ": " + t.name
		if opts.Verbose {
			fmt.Fprintf(opts.Out, "=== RUN   %s\n", name)
		}
		start := time.Now()
		f := tf.run(t)
		switch {
		case f != nil && tf.scriptErr != "" && reported[tf.scriptErr]:
			notRun++
			report(opts.Out, "SKIP", name, time.Since(start), &testFailure{message: "its scripts do not load (the failure above)"})
			continue
		case f != nil:
			if tf.scriptErr != "" {
				reported[tf.scriptErr] = true
			}
			failed++
			report(opts.Out, "FAIL", name, time.Since(start), f)
			continue
		}
		passed++
		if opts.Verbose {
			report(opts.Out, "PASS", name, time.Since(start), nil)
		}
	}
	return passed, failed, len(tests), notRun
}

func report(w io.Writer, verdict, name string, d time.Duration, f *testFailure) {
	fmt.Fprintf(w, "--- %s: %s (%.2fs)\n", verdict, name, d.Seconds())
	if f == nil {
		return
	}
	for _, l := range f.lines() {
		fmt.Fprintf(w, "    %s\n", l)
	}
}
