// Command goka is goka's side of the bench harness's comparisons (issue 16): goka's word
// count (Input + Persist with an Int64 codec + Emit, as goka's own examples count) and a
// stateless re-emit (Input + Emit), each as a scenario process of the harness. It is a
// module of its own so that the product's go.mod does not carry goka; the harness builds it
// and starts it like its other scenario processes, with the same flags and line protocol
// (bench/internal/childproc).
//
// Its sarama clients are built by the agent's own code (kafkaio.SaramaConfig) from the agent
// config the harness writes, so batching, acks, fetch sizes and compression are the agent's;
// only what goka needs of its own differs (see gokaConfigs).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/bench/internal/childproc"
)

func main() {
	fs := flag.NewFlagSet("bench-goka", flag.ExitOnError)
	var args childproc.Args
	var brokers string
	args.Flags(fs, &brokers)
	fs.BoolVar(&args.Verbose, "v", false, "pass goka's log to stderr")
	_ = fs.Parse(os.Args[1:])
	args.Brokers = strings.Split(brokers, ",")
	emit := childproc.Emitter(os.Stdout)
	if err := run(args, os.Stdin, emit); err != nil {
		emit(childproc.Event{Error: err.Error()})
		fmt.Fprintln(os.Stderr, "bench goka:", err)
		os.Exit(1)
	}
}

func run(args childproc.Args, stdin io.Reader, emit func(childproc.Event)) error {
	cfg, err := config.Load(filepath.Join(args.Dir, childproc.ConfigFile))
	if err != nil {
		return err
	}
	group, err := groupGraph(args.Scenario, goka.Group(cfg.ApplicationID))
	if err != nil {
		return err
	}
	consumer, producer, admin, err := gokaConfigs(cfg)
	if err != nil {
		return err
	}
	tmc := goka.NewTopicManagerConfig()
	tmc.Table.Replication = 1 // the harness's broker is one broker
	tmc.Stream.Replication = 1
	logger := log.New(io.Discard, "", 0)
	if args.Verbose {
		logger = log.New(os.Stderr, "goka: ", log.LstdFlags)
	}
	stopProfile, err := childproc.StartCPUProfile(args.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	p, err := goka.NewProcessor(args.Brokers, group,
		goka.WithConsumerGroupBuilder(goka.ConsumerGroupBuilderWithConfig(consumer)),
		goka.WithConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(consumer)),
		goka.WithProducerBuilder(goka.ProducerBuilderWithConfig(producer)),
		goka.WithTopicManagerBuilder(goka.TopicManagerBuilderWithConfig(admin, tmc)),
		goka.WithStorageBuilder(storage.DefaultBuilder(filepath.Join(args.Dir, "state"))),
		goka.WithLogger(logger),
	)
	if err != nil {
		return fmt.Errorf("goka processor: %w", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	running := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	go func() {
		if p.WaitForReadyContext(ctx) == nil && ctx.Err() == nil {
			close(running)
		}
	}()
	return childproc.Serve(stdin, emit, childproc.Processor{Running: running, Done: done, Stop: cancel}, stopProfile)
}

// groupGraph is the processor of a scenario: "wordcount" counts each key in its group table
// and emits every new count; "stateless" re-emits the values of keys longer than four
// letters upper-cased, as bench/scripts/stateless.lua does.
func groupGraph(scenario string, group goka.Group) (*goka.GroupGraph, error) {
	in, out := goka.Stream(childproc.InputTopic), goka.Stream(childproc.OutputTopic)
	switch scenario {
	case "wordcount":
		// Every input line holds one word, its key: goka counts the key, as its examples do.
		return goka.DefineGroup(group,
			goka.Input(in, new(codec.Bytes), func(ctx goka.Context, _ any) {
				var n int64
				if v := ctx.Value(); v != nil {
					n = v.(int64)
				}
				n++
				ctx.SetValue(n)
				ctx.Emit(out, ctx.Key(), n)
			}),
			goka.Output(out, new(codec.Int64)),
			goka.Persist(new(codec.Int64)),
		), nil
	case "stateless":
		return goka.DefineGroup(group,
			goka.Input(in, new(codec.String), func(ctx goka.Context, msg any) {
				if len(ctx.Key()) > 4 {
					ctx.Emit(out, ctx.Key(), strings.ToUpper(msg.(string)))
				}
			}),
			goka.Output(out, new(codec.String)),
		), nil
	}
	return nil, fmt.Errorf("unknown goka scenario %q (have: wordcount, stateless)", scenario)
}

// gokaConfigs are the agent's sarama configs for cfg with what goka needs of its own: its
// copartitioning assignor (a key's input and group table partitions go to the same member),
// and sarama's offset auto-commit, through which goka commits the offsets it marks once
// their outputs and table updates are acknowledged (the agent commits at its barrier
// instead).
func gokaConfigs(cfg *config.Config) (consumer, producer, admin *sarama.Config, err error) {
	if cfg.ExactlyOnce() {
		return nil, nil, nil, errors.New("goka has no exactly-once: its scenarios take an at_least_once agent config")
	}
	if consumer, err = kafkaio.SaramaConfig(cfg, kafkaio.RoleConsumer); err != nil {
		return nil, nil, nil, err
	}
	consumer.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{goka.CopartitioningStrategy}
	consumer.Consumer.Offsets.AutoCommit.Enable = true
	if producer, err = kafkaio.SaramaConfig(cfg, kafkaio.RoleProducer); err != nil {
		return nil, nil, nil, err
	}
	if admin, err = kafkaio.SaramaConfig(cfg, kafkaio.RoleAdmin); err != nil {
		return nil, nil, nil, err
	}
	return consumer, producer, admin, nil
}
