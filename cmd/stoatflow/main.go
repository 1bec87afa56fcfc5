// Command stoatflow runs Kafka Streams topologies written in Lua.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/stoatflow/stoatflow/agent"
	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/watch"
	"github.com/stoatflow/stoatflow/luart"
	"github.com/stoatflow/stoatflow/luart/suggest"
	"github.com/stoatflow/stoatflow/pipeline"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// command is one sub-command: its name, its arguments and what it does in the usage
// text, and what runs it.
type command struct {
	name, args, what string
	run              func(args []string, stdout, stderr io.Writer) int
}

// commands are the sub-commands, in the order `stoatflow --help` lists them.
var commands = []command{
	{"run", "[-c agent.toml] [--watch]", "run the agent (the default command)", cmdRun},
	{"validate", "[-c agent.toml] [--strict] [--against URL] [--tests]", "load config and scripts, build the topology (--tests: and run the scripts' tests); exit 0, or 1 with the errors", cmdValidate},
	{"describe", "[-c agent.toml] [-format text|dot|mermaid]", "print the Kafka Streams TopologyDescription text, or draw it", cmdDescribe},
	{"test", "[-run RE] [-v] [-w] [paths]", "run the *_test.lua pipeline tests (default scripts/)", cmdTest},
	{"query", "[-addr host:port] COMMAND ...", "read a running agent's state stores", cmdQuery},
	{"top", "[-addr host:port]", "a running agent's per-node rates, lag, watermark, commits", cmdTop},
	{"tap", "NODE [-n N] [-format json|text]", "the records leaving a node of a running agent", cmdTap},
	{"reset", "[-c agent.toml]", "delete the application's whole state directory", cmdReset},
	{"version", "", "print the version (also --version)", cmdVersion},
	{"help", "[COMMAND | config]", "this text, a command's flags, or every config key", nil},
}

func usage() string {
	const argsWidth = 30
	var b strings.Builder
	b.WriteString("StoatFlow runs Kafka Streams topologies written in Lua.\n\nUsage:\n")
	for _, c := range commands {
		if len(c.args) > argsWidth {
			fmt.Fprintf(&b, "  stoatflow %-8s %s\n  %*s%s\n", c.name, c.args, 20+argsWidth, "", c.what)
			continue
		}
		fmt.Fprintf(&b, "  stoatflow %-8s %-*s %s\n", c.name, argsWidth, c.args, c.what)
	}
	b.WriteString("\n\"stoatflow help COMMAND\" (or \"stoatflow COMMAND -h\") prints a command's flags.\n" +
		"Configuration keys: \"stoatflow help config\" or docs/config.md.\n")
	return b.String()
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// unknownCommand is the error for a command that is not one, with the closest when the name
// looks misspelled.
func unknownCommand(prefix, name string) string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	if best, ok := suggest.Closest(name, names); ok {
		return fmt.Sprintf("%s: unknown command %q; did you mean %q?\n\n%s", prefix, name, best, usage())
	}
	return fmt.Sprintf("%s: unknown command %q\n\n%s", prefix, name, usage())
}

// Exit codes: 0 success, 1 failure or problems found, 2 usage or not supported yet.
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return cmdRun(args, stdout, stderr)
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage())
		return 0
	case "-version", "--version":
		return cmdVersion(nil, stdout, stderr)
	case "help":
		return cmdHelp(args[1:], stdout, stderr)
	}
	if args[0] != "" && args[0][0] == '-' {
		// Flags first: the default command, run.
		return cmdRun(args, stdout, stderr)
	}
	c := lookup(args[0])
	if c == nil || c.run == nil {
		fmt.Fprint(stderr, unknownCommand("stoatflow", args[0]))
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

// cmdHelp prints the usage, a command's flags (as COMMAND -h does, but on stdout), or the
// configuration keys.
func cmdHelp(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, usage())
		return 0
	case len(args) > 1:
		fmt.Fprintf(stderr, "stoatflow help: one command at a time, not %q\n", strings.Join(args, " "))
		return 2
	case args[0] == "config":
		fmt.Fprintf(stdout, "Configuration keys (docs/config.md explains each):\n%s", config.Usage())
		return 0
	}
	c := lookup(args[0])
	if c == nil || c.run == nil {
		fmt.Fprint(stderr, unknownCommand("stoatflow help", args[0]))
		return 2
	}
	return c.run([]string{"-h"}, stdout, stdout)
}

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
			fmt.Fprintln(stderr, "Usage: stoatflow version   (also stoatflow --version)")
			return 0
		}
		fmt.Fprintf(stderr, "stoatflow version: unexpected argument %q\n", args[0])
		return 2
	}
	fmt.Fprintln(stdout, "stoatflow", buildVersion())
	return 0
}

func buildVersion() string {
	if version != "dev" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return version
}

// flags parses the common -c flag (and --log.* for run).
type commonFlags struct {
	config    string
	logLevel  string
	logFormat string
	strict    bool
	against   string
	tests     bool
	watch     bool
	format    string
}

func parseFlags(name string, args []string, stderr io.Writer, withLog bool) (*commonFlags, *flag.FlagSet, error) {
	f := &commonFlags{}
	fs := flag.NewFlagSet("stoatflow "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.config, "c", "agent.toml", "path of the agent's TOML config")
	if name == "validate" {
		fs.BoolVar(&f.strict, "strict", false, "fail on warnings too (ignored keys, deprecated forms)")
		fs.StringVar(&f.against, "against", "", "also check the change is reload-compatible with the agent at this URL (http://host:port), or, given \"listen\", at the config's agent.http.listen")
		fs.BoolVar(&f.tests, "tests", false, "also run the scripts' tests: NAME_test.lua and NAME_*_test.lua beside each script NAME.lua (stoatflow test)")
	}
	if name == "run" {
		fs.BoolVar(&f.watch, "watch", false, fmt.Sprintf("reload whenever the config file or a .lua file below a script's directory changes (polled every %s)", watch.Interval))
	}
	if name == "describe" {
		fs.StringVar(&f.format, "format", "text", "text (as Kafka Streams prints it), dot (Graphviz) or mermaid")
	}
	if withLog {
		fs.StringVar(&f.logLevel, "log.level", "", "override agent.log.level (debug|info|warn|error)")
		fs.StringVar(&f.logFormat, "log.format", "", "override agent.log.format (text|json)")
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: stoatflow %s [flags]\n", name)
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\nConfiguration keys: stoatflow help config, or docs/config.md.")
	}
	return f, fs, fs.Parse(args)
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return runAgent(ctx, args, stdout, stderr, watch.Interval)
}

// runAgent runs the agent until ctx is done; with --watch it reloads the agent whenever
// the config file or a script changes (the files polled every interval).
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer, interval time.Duration) int {
	f, _, cfg, code := loadFor("run", args, stderr, true)
	if code >= 0 {
		return code
	}
	logger, level, err := agent.NewLogger(stderr, cfg, f.logLevel, f.logFormat)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	logNotices(logger, cfg)
	// systemd's ExecReload sends SIGHUP after `stoatflow validate`: reload the config and
	// scripts. The outcome is logged and counted by the agent.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	a, err := agent.New(cfg, agent.Options{Logger: logger, Stdout: stdout, Version: buildVersion(), LogLevel: level})
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	go func() {
		for range hup {
			if err := a.Reload(); err != nil {
				logger.Warn("SIGHUP: reload not started", "err", err)
			}
		}
	}()
	if f.watch {
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go reloadOnChange(watchCtx, a, cfg, logger, interval)
	}
	if err := a.Run(ctx); err != nil {
		logger.Error("stopped with an error", "err", err)
		return 1
	}
	return 0
}

// reloadOnChange reloads the agent whenever the config file or a .lua file below the
// directory of a script changes: the reload loads and checks the new scripts, and refuses
// (logging the reason) what it would refuse on SIGHUP.
func reloadOnChange(ctx context.Context, a *agent.Agent, cfg *config.Config, logger *slog.Logger, interval time.Duration) {
	dirs := map[string]bool{}
	for _, s := range cfg.Scripts {
		dirs[filepath.Dir(s)] = true
	}
	paths := []string{cfg.Path}
	for d := range dirs {
		paths = append(paths, d)
	}
	w := watch.New(func() []string { return watch.LuaFiles(paths...) })
	logger.Info("--watch: reloading whenever the config or a script changes", "files", len(watch.LuaFiles(paths...)), "every", interval)
	w.Run(ctx, interval, func(changed []string) {
		logger.Info("--watch: files changed; reloading", "files", changed)
		for {
			err := a.Reload()
			if !errors.Is(err, agent.ErrReloadPending) {
				if err != nil {
					logger.Warn("--watch: reload not started", "err", err)
				}
				return
			}
			// The pending reload may have read the files before this change: start
			// another once it is done.
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	})
}

// cmdValidate loads the config and every script and builds the topology, reporting every
// problem found (each with file:line or config key). Exit 0: valid; 1: problems (or
// warnings under --strict); 2: usage.
func cmdValidate(args []string, stdout, stderr io.Writer) int {
	f, fs, cfg, code := loadFor("validate", args, stderr, false)
	if code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "stoatflow validate: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var warnings []string
	for _, n := range cfg.Notices {
		warnings = append(warnings, n.Format(f.config))
	}
	scriptWarnings, err := agent.Validate(cfg)
	warnings = append(warnings, scriptWarnings...)
	var testFiles []string
	if f.tests && err == nil {
		var untested []string
		if testFiles, untested, err = luart.TestFilesOf(cfg.Scripts); err != nil {
			err = fmt.Errorf("%s: finding the scripts' tests: %w", f.config, err)
		}
		for _, s := range untested {
			warnings = append(warnings, fmt.Sprintf("%s: no tests (NAME_test.lua beside it) for --tests to run", s))
		}
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if len(testFiles) > 0 {
		if _, failed, err := luart.RunTests(testFiles, luart.TestOptions{Out: stdout}); err != nil || failed > 0 {
			if err != nil {
				fmt.Fprintln(stderr, err)
			}
			fmt.Fprintf(stderr, "%s: the scripts' tests failed\n", f.config)
			return 1
		}
	}
	if f.strict && len(warnings) > 0 {
		fmt.Fprintf(stderr, "%s: %d warning(s), failing because of --strict\n", f.config, len(warnings))
		return 1
	}
	fmt.Fprintf(stdout, "%s: OK (%d script(s))\n", f.config, len(cfg.Scripts))
	if f.against != "" {
		against := f.against
		if against == "listen" {
			against = listenURL(cfg)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := agent.ReloadCompatibleWith(ctx, cfg, against); err != nil {
			fmt.Fprintf(stderr, "%s: not reload-compatible with the agent at %s: %v\n", f.config, against, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: reload-compatible with the agent at %s\n", f.config, against)
	}
	return 0
}

// listenURL is where the agent a config runs listens, as a client on the same host reaches
// it: https with agent.http.tls.*, and loopback for a wildcard address.
func listenURL(cfg *config.Config) string {
	scheme := "http"
	if cfg.HTTPTLSCert != "" {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(cfg.HTTPListen)
	if err != nil {
		return scheme + "://" + cfg.HTTPListen
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

func cmdDescribe(args []string, stdout, stderr io.Writer) int {
	f, _, cfg, code := loadFor("describe", args, stderr, false)
	if code >= 0 {
		return code
	}
	render := map[string]func(*pipeline.TopologyDescription) string{
		"text":    (*pipeline.TopologyDescription).String,
		"dot":     (*pipeline.TopologyDescription).DOT,
		"mermaid": (*pipeline.TopologyDescription).Mermaid,
	}[f.format]
	if render == nil {
		fmt.Fprintf(stderr, "stoatflow describe: -format %q is not one of text, dot, mermaid\n", f.format)
		return 2
	}
	desc, err := agent.Describe(cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprint(stdout, render(desc))
	return 0
}

func cmdReset(args []string, stdout, stderr io.Writer) int {
	_, _, cfg, code := loadFor("reset", args, stderr, false)
	if code >= 0 {
		return code
	}
	dir := filepath.Join(cfg.StateDir, cfg.ApplicationID)
	if err := agent.ResetState(dir); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "deleted the state directory %s\n", dir)
	return 0
}

// loadFor parses a command's flags and loads its config; a code ≥ 0 ends the command with it.
func loadFor(name string, args []string, stderr io.Writer, withLog bool) (*commonFlags, *flag.FlagSet, *config.Config, int) {
	f, fs, err := parseFlags(name, args, stderr, withLog)
	if err != nil {
		return nil, nil, nil, usageCode(err)
	}
	cfg, err := config.Load(f.config)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, nil, nil, 1
	}
	return f, fs, cfg, -1
}

func usageCode(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// logNotices logs the config's notices: an ignored key as info, a value Kafka Streams
// overrides and a deprecated key as warnings, as Kafka Streams logs them.
func logNotices(logger *slog.Logger, cfg *config.Config) {
	for _, n := range cfg.Notices {
		if n.Kind == config.KindOverridden || n.Kind == config.KindDeprecated {
			logger.Warn(n.Format(cfg.Path))
		} else {
			logger.Info(n.Format(cfg.Path))
		}
	}
}
