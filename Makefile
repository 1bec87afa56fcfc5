GO      ?= go
BIN     := bin/stoatflow
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
PREFIX  ?= /usr/local

.PHONY: build run test bench lint install clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/stoatflow

run: build
	./$(BIN) run -c agent.toml

test:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) test -race -timeout 15m ./...
	# fault injection through sarama's transactional error paths (see agent/faults_test.go)
	$(GO) test -timeout 10m -run '^TestFault' ./agent/
	$(GO) run ./cmd/stoatflow test scripts

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pipeline/... ./luart/...

lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)

install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/stoatflow
	install -D -m 0644 systemd/stoatflow.service $(DESTDIR)/etc/systemd/system/stoatflow.service

clean:
	rm -rf bin .stoatflow-state
