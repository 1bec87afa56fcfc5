package main

import (
	"flag"
	"fmt"
	"io"
	"regexp"

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
	_, failed, err := luart.RunTests(fs.Args(), opts)
	if err != nil {
		fmt.Fprintf(stderr, "stoatflow test: %v\n", err)
		return 1
	}
	if failed > 0 {
		return 1
	}
	return 0
}
