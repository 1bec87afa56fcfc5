package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/stoatflow/stoatflow/agent/watch"
	"github.com/stoatflow/stoatflow/luart"
)

// cmdTest runs Lua pipeline tests: exit 0 when all pass, 1 on a failure or when no test file
// is found, 2 on a usage error.
func cmdTest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stoatflow test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	run := fs.String("run", "", "run only the tests whose name matches this regular expression")
	verbose := fs.Bool("v", false, "print every test, and the print output of the pipelines under test")
	timeout := fs.Duration("timeout", luart.DefaultTestTimeout, "time budget of one test function")
	watchFiles := fs.Bool("w", false, fmt.Sprintf("watch: run the tests again whenever a .lua file below the paths changes (polled every %s); stop with Ctrl-C", watch.Interval))
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: stoatflow test [flags] [files or dirs]   (default: scripts/)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageCode(err)
	}
	opts := luart.TestOptions{Verbose: *verbose, Out: stdout, Timeout: *timeout}
	if *run != "" {
		re, err := regexp.Compile(*run)
		if err != nil {
			fmt.Fprintf(stderr, "stoatflow test: -run: %v\n", err)
			return 2
		}
		opts.Run = re
	}
	if *watchFiles {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return watchTests(ctx, fs.Args(), opts, stderr, watch.Interval)
	}
	return runTests(fs.Args(), opts, stderr)
}

func runTests(paths []string, opts luart.TestOptions, stderr io.Writer) int {
	_, failed, err := luart.RunTests(paths, opts)
	if err != nil {
		fmt.Fprintf(stderr, "stoatflow test: %v\n", err)
		return 1
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// watchTests runs the tests, then again whenever a .lua file below paths changes, until ctx
// is done; the exit code is the last run's.
func watchTests(ctx context.Context, paths []string, opts luart.TestOptions, stderr io.Writer, interval time.Duration) int {
	if len(paths) == 0 {
		paths = []string{"scripts"}
	}
	code := runTests(paths, opts, stderr)
	w := watch.New(func() []string { return watch.LuaFiles(paths...) })
	fmt.Fprintf(opts.Out, "watching %s for changes (Ctrl-C to stop)\n", strings.Join(paths, ", "))
	w.Run(ctx, interval, func(changed []string) {
		fmt.Fprintf(opts.Out, "\n%s changed; running the tests again\n", strings.Join(changed, ", "))
		code = runTests(paths, opts, stderr)
		fmt.Fprintf(opts.Out, "watching %s for changes (Ctrl-C to stop)\n", strings.Join(paths, ", "))
	})
	return code
}
