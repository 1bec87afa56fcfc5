// Command kafkacluster starts and stops the Apache Kafka 4.4 clusters of the real-broker
// tests (package kafkatest) outside a test: for make kafka-up and kafka-down, and around
// the whole real-broker run of make test-kafka.
//
//	kafkacluster resolve                                 resolve the jars with Maven (CI does it once)
//	kafkacluster up [-dir D] [-nodes 1|3] [-tv 1|2]      start a cluster in D, print its bootstrap servers
//	kafkacluster down [-dir D]                           stop D's clusters and remove D
//	kafkacluster exec [-dir D] [-up 1,3] -- CMD [ARG...] run CMD with the clusters of D shared
//
// D defaults to $STOATFLOW_KAFKA_DIR. exec starts (in the background, while CMD runs) a
// TV2 cluster of each size -up lists, runs CMD with STOATFLOW_KAFKA_DIR=D (a new temporary
// directory without -dir), stops every cluster in D when CMD ends, and removes D unless CMD
// failed: then D is kept for its logs. Without Java or Maven it fails when CI is set and
// otherwise skips CMD, saying so.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "resolve":
		err = kafkatest.Resolve()
	case "up":
		err = up(args)
	case "down":
		err = down(args)
	case "exec":
		var code int
		code, err = run(args)
		if err == nil {
			os.Exit(code)
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkacluster:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage: kafkacluster resolve
       kafkacluster up [-dir D] [-nodes 1|3] [-tv 1|2]
       kafkacluster down [-dir D]
       kafkacluster exec [-dir D] [-up 1,3] -- CMD [ARG...]`)
	os.Exit(2)
}

func dirFlag(fs *flag.FlagSet) *string {
	return fs.String("dir", os.Getenv(kafkatest.EnvDir), "the shared directory of clusters (default $"+kafkatest.EnvDir+")")
}

func up(args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	dir := dirFlag(fs)
	nodes := fs.Int("nodes", 1, "nodes: 1 or 3")
	tv := fs.Int("tv", 2, "transaction.version: 1 or 2")
	fs.Parse(args)
	if *dir == "" {
		return errors.New("up: no -dir (nor $" + kafkatest.EnvDir + ")")
	}
	start := time.Now()
	c, err := kafkatest.Up(*dir, kafkatest.Spec{Nodes: *nodes, TransactionVersion: *tv})
	if err != nil {
		return err
	}
	fmt.Printf("%s up (%.1fs): bootstrap.servers = %s\nlogs: %s/node-*/server.log\ntests run by hand share it after: export %s=%s\n",
		c.Spec().Name(), time.Since(start).Seconds(), c.BootstrapServers(), c.Dir(), kafkatest.EnvDir, *dir)
	return nil
}

func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	dir := dirFlag(fs)
	fs.Parse(args)
	if *dir == "" {
		return errors.New("down: no -dir (nor $" + kafkatest.EnvDir + ")")
	}
	if err := kafkatest.Down(*dir); err != nil {
		return err
	}
	return os.RemoveAll(*dir)
}

// run is exec: it returns CMD's exit code.
func run(args []string) (int, error) {
	fs := flag.NewFlagSet("exec", flag.ExitOnError)
	dir := fs.String("dir", "", "the shared directory of clusters (default: a new temporary one)")
	sizes := fs.String("up", "", "comma-separated sizes (1, 3) of TV2 clusters to start at once")
	fs.Parse(args)
	if fs.NArg() == 0 {
		usage()
	}
	if err := kafkatest.Resolve(); err != nil {
		if errors.Is(err, kafkatest.ErrMissingTool) && os.Getenv("CI") == "" {
			fmt.Printf("kafkacluster: real-broker tests skipped: %v\n", err)
			return 0, nil
		}
		return 0, err
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "stoatflow-kafka-")
		if err != nil {
			return 0, err
		}
		*dir = d
	}
	var wg sync.WaitGroup
	if *sizes != "" {
		for _, s := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(s)
			if err != nil {
				return 0, fmt.Errorf("exec: -up %q: %v", *sizes, err)
			}
			wg.Go(func() {
				start := time.Now()
				c, err := kafkatest.Up(*dir, kafkatest.Spec{Nodes: n})
				if err != nil {
					// The tests that need it try again and fail with their own error.
					fmt.Fprintf(os.Stderr, "kafkacluster: starting a %d-node cluster: %v\n", n, err)
					return
				}
				fmt.Printf("kafkacluster: %s up in %.1fs: %s\n", c.Spec().Name(), time.Since(start).Seconds(), c.BootstrapServers())
			})
		}
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), kafkatest.EnvDir+"="+*dir)
	// Ctrl-C reaches CMD from the terminal; a SIGTERM is passed on. Either way the clusters
	// are stopped once CMD has ended.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	err := cmd.Start()
	if err == nil {
		go func() {
			for s := range sigs {
				if s == syscall.SIGTERM {
					_ = cmd.Process.Signal(s)
				}
			}
		}()
		err = cmd.Wait()
	}
	wg.Wait()
	if derr := kafkatest.Down(*dir); derr != nil {
		fmt.Fprintln(os.Stderr, "kafkacluster:", derr)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		fmt.Fprintf(os.Stderr, "kafkacluster: kept the clusters' directory for their logs: %s\n", *dir)
		return exit.ExitCode(), nil
	case err != nil:
		return 0, err
	}
	return 0, os.RemoveAll(*dir)
}
