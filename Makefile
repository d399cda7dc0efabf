# xres — see README.md. `make test` is what CI runs.
GO      ?= go
BIN     ?= bin
PKGS    := ./...

.PHONY: all build unit test integration bench bench-rpc bench-am lint demo proto proto-check clean

all: build

# am is static; container-launcher links libc so that NVML (go-nvml, loaded
# with dlopen) works where the NVIDIA driver is installed. Without cgo it
# still builds and discovers GPUs through nvidia-smi.
build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/am
	$(GO) build -o $(BIN)/ ./cmd/container-launcher

# Start the minicluster, run 4 GPU workers over its 2 NodeManagers, show
# each worker's CUDA_VISIBLE_DEVICES, stop the cluster.
demo:
	docker/hadoop-minicluster/demo.sh

# Test runs go through integration/testsummary: plain go test's output, then one closing
# line ("N passed, N failed, N skipped") and every skipped test with its reason.
SHELL       := bash
SUMMARY     := $(BIN)/testsummary
UNIT_TESTS  := $(GO) test -json -count=1 $(PKGS)
INTEG_TESTS := $(GO) test -json -count=1 -tags integration -timeout 40m ./integration/...

$(SUMMARY): $(wildcard integration/testsummary/*.go)
	@mkdir -p $(BIN)
	$(GO) build -o $@ ./integration/testsummary

# Unit tests: no Hadoop, no GPU needed.
unit: $(SUMMARY)
	set -o pipefail; $(UNIT_TESTS) | TESTSUMMARY_LABEL="make unit" $(SUMMARY)

# Everything: unit tests, then the integration suite against the real Hadoop
# minicluster (started and stopped by integration/'s TestMain), one summary for both.
test: $(SUMMARY)
	set -o pipefail; { $(UNIT_TESTS); u=$$?; $(INTEG_TESTS); i=$$?; exit $$((u|i)); } \
		| TESTSUMMARY_LABEL="make test" $(SUMMARY)

integration: $(SUMMARY)
	set -o pipefail; $(INTEG_TESTS) | TESTSUMMARY_LABEL="make integration" $(SUMMARY)

# Includes container-launcher's overhead and 64-launcher contention beside a
# Flink-style flock script (driver/launch; see median-ms, the median per run).
bench:
	$(GO) test -timeout 30m -run '^$$' -bench . -benchmem $(PKGS)

# getClusterMetrics: our RPC client vs Hadoop's Java YarnClient (integration/javabench,
# built with Maven on first use), 1 and 8 callers, against the real cluster.
bench-rpc:
	$(GO) test -count=1 -tags integration -timeout 40m -run '^$$' -bench 'RPCGetClusterMetrics' -benchtime 1x ./integration/

# am submit vs Hadoop's own DistributedShell (hadoop-yarn-applications-distributedshell 3.4.2,
# via integration/dsbench, built with Maven on first use; XRES_DSHELL_JAR=<jar> names another):
# submit to all 4 GPU workers running, and the AM's peak RSS, against the real cluster.
bench-am:
	$(GO) test -count=1 -tags integration -timeout 40m -run '^$$' -bench 'AMvsDistributedShell' -benchtime 1x -v ./integration/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags integration ./integration/...

# Regenerate hadoopproto/*.pb.go with Debian's protoc (apt-get install -y
# protobuf-compiler) and the protoc-gen-go of the protobuf module in go.mod.
PROTOS := $(sort $(wildcard hadoopproto/hadoopcommon/*.proto) $(wildcard hadoopproto/hadoopyarn/*.proto))
proto:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go
	protoc -I . --plugin=protoc-gen-go=$(BIN)/protoc-gen-go \
		--go_out=. --go_opt=module=github.com/xres/xres $(PROTOS)

# CI: fail when the committed generated code drifts from the .proto files.
proto-check: proto
	git diff --exit-code -- hadoopproto/
	@test -z "$$(git status --porcelain -- hadoopproto/)" || { git status --porcelain -- hadoopproto/; exit 1; }

clean:
	rm -rf $(BIN)
