GO      ?= go
BIN     := bin/stoatflow
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
PREFIX  ?= /usr/local
IMAGE   ?= stoatflow
FUZZTIME ?= 200000x
FUZZMINIMIZE ?= 1000x

.PHONY: build run test conformance test-kafka kafka-up kafka-down soak bench lint fuzz install check-unit docker clean ui ui-check

# The agent tests that run again with 2 and 4 workers (num.stream.threads, through
# STOATFLOW_TEST_THREADS: agent/agent_test.go's testThreads): the end-to-end runs, the
# examples, the fault loops, and what workers change the most (windows and suppression,
# standbys and takeovers, global stores, queries, reloads, exception handlers, corrupt state).
THREADS_TESTS := '^(TestAgent|TestStopMidStream|TestExamples|TestPurchasesExampleRuns|TestFault|TestWindow|TestSuppressed|TestSeveralAgents|TestTakeover|TestStoppingActive|TestGlobal|TestAddGlobalStore|TestQuery|TestReload|TestCorruptState|TestHandler|TestProductionHandler|TestUncommittedBudget|TestCommitIntervalZero|TestRecordCache|TestPatternSource|TestWorkers)'

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/stoatflow

# make run EXAMPLE=NAME runs scripts/NAME.lua with scripts/NAME.toml (its demo feeder);
# the default, word count, runs with agent.toml.
EXAMPLE  ?= wordcount
EXAMPLES := wordcount $(filter-out wordcount,$(basename $(notdir $(wildcard scripts/*.toml))))
EXAMPLE_CONFIG := $(if $(filter wordcount,$(EXAMPLE)),agent.toml,scripts/$(EXAMPLE).toml)

run: build
	@test -f $(EXAMPLE_CONFIG) || { echo "make run: no example $(EXAMPLE) (there are: $(EXAMPLES))"; exit 2; }
	./$(BIN) run -c $(EXAMPLE_CONFIG)

# make test runs every suite below, also after one fails, lists the ones that failed and
# then fails: a red line early must not hide the state of the suites after it. Each suite
# runs alone too (make test-race).
TEST_SUITES := test-vet test-gofmt test-race test-iterpoison test-iterpoison-agent test-faults test-threads test-scripts conformance test-kafka
.PHONY: $(TEST_SUITES)

test:
	@failed=; for suite in $(TEST_SUITES); do \
	  echo "== make $$suite"; \
	  $(MAKE) --no-print-directory $$suite || failed="$$failed $$suite"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: all $(words $(TEST_SUITES)) suites passed"

test-vet:
	$(GO) vet -tags kafka ./...

test-gofmt:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)

# also runs every fuzz target on its seed corpus (f.Add and testdata/fuzz/)
test-race:
	$(GO) test -race -timeout 15m ./...

# iterators overwrite what they handed out at the next step (state/iterator.go): a slice
# kept past Next or Close fails loudly. The engine and store tests, and the agent's store,
# query and join tests on LevelDB.
test-iterpoison:
	$(GO) test -tags iterpoison -timeout 5m ./state/... ./pipeline/... ./luart/...

test-iterpoison-agent:
	$(GO) test -tags iterpoison -timeout 5m -run 'Query|Store|Window|Join|Global|RecordCache|Restore' ./agent/

# fault injection through sarama's transactional error paths (see agent/faults_test.go)
test-faults:
	$(GO) test -timeout 10m -run '^TestFault' ./agent/

# the same agents with 2 workers (under the race detector) and with 4
test-threads:
	STOATFLOW_TEST_THREADS=2 $(GO) test -race -timeout 15m -run $(THREADS_TESTS) ./agent/
	STOATFLOW_TEST_THREADS=4 $(GO) test -timeout 15m -run $(THREADS_TESTS) ./agent/

test-scripts:
	$(GO) run ./cmd/stoatflow test scripts deploy

# Kafka Streams 4.4 as the oracle (conformance/README.md): Maven builds the Java side (its jars
# stay in ~/.m2), then one JVM runs every case on CONFORMANCE_SEEDS seeds in TopologyTestDriver
# while StoatFlow runs them too, at each of CONFORMANCE_THREADS (num.stream.threads), and the
# two are compared. CONFORMANCE_CASES (a regexp) and CONFORMANCE_SEED (one seed) narrow it down.
# CONFORMANCE_TIME lists StoatFlow's time modes: the global watermark (classic mode) and each
# task's own time (streams mode), each run at every thread count.
CONFORMANCE_SEEDS ?= 50
CONFORMANCE_THREADS ?= 1,2,4
CONFORMANCE_TIME ?= watermark,task

conformance:
	cd conformance/java && mvn -q -B package
	CONFORMANCE=1 CONFORMANCE_SEEDS=$(CONFORMANCE_SEEDS) CONFORMANCE_THREADS=$(CONFORMANCE_THREADS) CONFORMANCE_TIME=$(CONFORMANCE_TIME) $(GO) test -count=1 -timeout 15m ./conformance/

# Apache Kafka 4.4 on loopback (test/kafka, docs/testing.md#real-broker-tests). Real-broker
# tests are test files with the build tag kafka, their names starting with TestKafka.
# test-kafka starts the 1- and 3-node clusters once, runs those tests of every package
# (KAFKA_PKGS) against them, stops them, and keeps their logs if a test failed. Without Java
# or Maven it skips, saying so, unless CI is set: then it fails. No race detector: the
# transactional paths meet sarama's known race (IBM/sarama#2913, see agent/faults_test.go);
# KAFKA_FLAGS=-race adds it. The handover tests (conformance/) run the Java side's Kafka Streams
# application: Maven builds it first, where Java and Maven are installed (without them the
# real-broker tests skip, or fail under CI).
KAFKACLUSTER := $(GO) run ./test/kafka/cmd/kafkacluster
KAFKA_PKGS ?= $(addprefix ./,$(sort $(dir $(shell git ls-files -co --exclude-standard '*_test.go' | xargs grep -l '^//go:build.*\bkafka\b'))))
KAFKA_RUN ?= ^TestKafka
KAFKA_FLAGS ?=
# the dev cluster of kafka-up: make kafka-up NODES=3 TV=1
KAFKA_DIR ?= $(CURDIR)/.kafka
NODES ?= 1
TV ?= 2

test-kafka:
	@if command -v mvn >/dev/null && command -v java >/dev/null; then cd conformance/java && mvn -q -B package; fi
	$(KAFKACLUSTER) exec -up 1,3 -- $(GO) test -tags kafka -count=1 -timeout 30m $(KAFKA_FLAGS) -run '$(KAFKA_RUN)' $(KAFKA_PKGS)

# A cluster to point an agent (bootstrap.servers) or a test run by hand at; kafka-down stops
# every cluster kafka-up started.
kafka-up:
	$(KAFKACLUSTER) up -dir $(KAFKA_DIR) -nodes $(NODES) -tv $(TV)

kafka-down:
	$(KAFKACLUSTER) down -dir $(KAFKA_DIR)

# Micro-benchmarks, then the harness (bench/): it writes the whole of bench/RESULTS.md from
# both, one run (machine, commit, date, load); analyses by hand go in bench/NOTES.md.
# BENCH_BROKERS are the brokers every scenario runs on, side by side: kfake (in process) and
# kafka (Apache Kafka 4.4, one node started by test/kafka, where Kafka Streams 4.4 runs too;
# needs Java and Maven). BENCH_FLAGS adds harness flags, e.g. BENCH_FLAGS="-cpuprofile
# /tmp/prof" (see go run ./bench -h).
BENCH_MICRO := $(or $(TMPDIR),/tmp)/stoatflow-bench-micro.txt
BENCH_BROKERS ?= kfake,kafka
BENCH_FLAGS ?=
# The long fault-injection run: 50 SIGKILLs at random points (make test runs 6), and 50
# cycles of killing or freezing the active of three agents (make test runs 3); the kill loops
# again with 2 workers per agent; then each fault of the 3-node Apache Kafka cluster
# (docs/reliability.md) 5 times into one running agent (make test runs each once), and once
# each on a cluster formatted with transaction.version 1 (make test runs them on 2); then 25
# SIGKILLs of a random agent of a streams group of three (docs/scaling.md; make test runs 5).
soak:
	STOATFLOW_SOAK_KILLS=50 $(GO) test -timeout 60m -count=1 -v -run '^TestFault' ./agent/
	STOATFLOW_SOAK_KILLS=50 STOATFLOW_TEST_THREADS=2 $(GO) test -timeout 60m -count=1 -v -run '^TestFault(SIGKILL|KillTheActive)' ./agent/
	STOATFLOW_KAFKA_FAULT_ROUNDS=5 $(MAKE) test-kafka KAFKA_PKGS=./agent/ KAFKA_RUN='^TestKafkaFault' KAFKA_FLAGS='-v -timeout 90m'
	STOATFLOW_KAFKA_FAULT_TV=1 $(MAKE) test-kafka KAFKA_PKGS=./agent/ KAFKA_RUN='^TestKafkaFault' KAFKA_FLAGS='-v -timeout 60m'
	STOATFLOW_KAFKA_STREAMS_KILLS=25 $(MAKE) test-kafka KAFKA_PKGS=./agent/ KAFKA_RUN='^TestKafkaStreamsGroupKillCycles' KAFKA_FLAGS='-v -timeout 60m'

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pipeline/... ./luart/... ./state/... ./agent/console/ > $(BENCH_MICRO) || (cat $(BENCH_MICRO); exit 1)
	cat $(BENCH_MICRO)
	$(GO) run ./bench -micro $(BENCH_MICRO) -brokers $(BENCH_BROKERS) -out bench/RESULTS.md $(BENCH_FLAGS)

# staticcheck at a pinned version (it needs go 1.26.0 or later), fetched and built by go run
# on first use and cached after. Its default checks; a finding that stands has a lint:ignore
# line that says why. vet and staticcheck see the real-broker tests too (-tags kafka).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	$(GO) vet -tags kafka ./...
	cd bench/goka && $(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) run $(STATICCHECK) -tags kafka ./...
	cd bench/goka && $(GO) run $(STATICCHECK) ./...

# Each fuzz target for FUZZTIME, a count of runs (NNNx): a duration races the fuzzing
# coordinator's own deadline in Go 1.26 (go.dev/issue/75804) and fails with "context deadline
# exceeded" and no crasher. `go test -list` finds the targets, so new ones join by themselves.
# Minimizing each new input is bounded by a count too: by default it may take a minute per
# input, which on a loaded machine looks like a hang (a worker at full CPU, no executions).
fuzz:
	@set -e; list=$$($(GO) test -list '^Fuzz' ./...); echo "$$list" | \
	  awk '/^Fuzz/ { t[++n] = $$1; next } /^ok/ { for (i = 1; i <= n; i++) print $$2, t[i]; n = 0 }' | \
	  while read -r pkg target; do \
	    echo "fuzz $$pkg $$target ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) "$$pkg"; \
	  done

# The binary and the unit are replaced on every install (an upgrade); the config and the
# scripts are the operator's once installed and never overwritten. The default config is
# agent.toml with its state.dir pointed at the unit's StateDirectory.
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/stoatflow
	install -d -m 0755 $(DESTDIR)/etc/systemd/system $(DESTDIR)/etc/stoatflow/scripts
	sed 's|/usr/local/bin/stoatflow|$(PREFIX)/bin/stoatflow|g' systemd/stoatflow.service > $(DESTDIR)/etc/systemd/system/stoatflow.service
	chmod 0644 $(DESTDIR)/etc/systemd/system/stoatflow.service
	@if [ -e $(DESTDIR)/etc/stoatflow/agent.toml ]; then \
	  echo "keeping $(DESTDIR)/etc/stoatflow/agent.toml"; \
	else \
	  sed 's|^state\.dir *=.*|state.dir = "/var/lib/stoatflow"|' agent.toml > $(DESTDIR)/etc/stoatflow/agent.toml && \
	  chmod 0644 $(DESTDIR)/etc/stoatflow/agent.toml && \
	  grep -q '^state.dir = "/var/lib/stoatflow"$$' $(DESTDIR)/etc/stoatflow/agent.toml && \
	  echo "installed $(DESTDIR)/etc/stoatflow/agent.toml"; \
	fi
	@for f in scripts/*.lua; do \
	  to=$(DESTDIR)/etc/stoatflow/scripts/$$(basename $$f); \
	  if [ -e $$to ]; then echo "keeping $$to"; else install -m 0644 $$f $$to && echo "installed $$to"; fi; \
	done
	# With DynamicUser=yes systemd moves this directory to /var/lib/private/stoatflow at the
	# first start and leaves a symlink here.
	install -d -m 0750 $(DESTDIR)/var/lib/stoatflow

# systemd-analyze verify needs ExecStart's binary to exist: check a copy of the unit that
# points at bin/stoatflow. Skipped where systemd-analyze is missing.
check-unit: build
	@if ! command -v systemd-analyze >/dev/null; then echo "systemd-analyze not installed: unit not verified"; exit 0; fi; \
	dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	sed 's|/usr/local/bin/stoatflow|$(CURDIR)/$(BIN)|g' systemd/stoatflow.service > "$$dir/stoatflow.service" && \
	systemd-analyze verify "$$dir/stoatflow.service" && echo "systemd/stoatflow.service: verified"

# The console draws its graph with @dagrejs/dagre, bundled by esbuild from agent/console/web
# into agent/console/ui/vendor/dagre.js. The built file is committed, so go build, go test
# and go install need no npm (docs/console.md says why); ui rebuilds it from the lockfile,
# ui-check (run by CI) checks that the committed file is exactly what the lockfile builds.
UI_WEB := agent/console/web

ui:
	cd $(UI_WEB) && npm ci --no-audit --no-fund && node build.mjs

ui-check:
	cd $(UI_WEB) && npm ci --no-audit --no-fund
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && (cd $(UI_WEB) && node build.mjs "$$dir") && \
	  for f in dagre.js dagre.LICENSE.txt; do \
	    cmp -s "$$dir/$$f" agent/console/ui/vendor/$$f || { echo "agent/console/ui/vendor/$$f is not what $(UI_WEB) builds: run make ui and commit it"; exit 1; }; \
	  done && echo "agent/console/ui/vendor: as built from $(UI_WEB)/package-lock.json"

docker:
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE):$(VERSION) -t $(IMAGE):latest .

clean:
	rm -rf bin .stoatflow-state
