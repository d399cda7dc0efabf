# xres — see README.md. `make test` is what CI runs.
GO      ?= go
BIN     ?= bin
PKGS    := ./...

.PHONY: all build unit test integration bench lint demo proto clean

all: build

build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/...

# Unit tests: no Hadoop, no GPU needed.
unit:
	$(GO) test -count=1 $(PKGS)

# Everything: unit tests, then the integration suite against the real
# Hadoop minicluster (started and stopped by integration/'s TestMain).
test: unit integration

integration:
	$(GO) test -count=1 -tags integration -timeout 40m ./integration/...

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags integration ./integration/...

clean:
	rm -rf $(BIN)
