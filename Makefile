# xres — see README.md. `make test` is what CI runs.
GO      ?= go
BIN     ?= bin
PKGS    := ./...

.PHONY: soak bench-report all build unit test integration bench bench-rpc bench-am bench-am-curve bench-spares lint demo proto proto-check clean

all: build

# -buildvcs=auto stamps the commit that --version prints (GOFLAGS may turn it off).
# am and container-launcher are static: they start fast and run on any Linux,
# whatever its C library. NVML (go-nvml, loaded with dlopen) needs cgo: the
# launcher reads it through xres-nvml, a small cgo program shipped beside it.
# Without a C compiler, `make build CGO_ENABLED=0` builds a helper that says
# NVML is unavailable, and the launcher discovers GPUs through nvidia-smi.
# go-nvml's nvml.h marks the calls NVIDIA retired in CUDA 13 DEPRECATED, and cgo's
# generated wrappers name every one of them: gcc's -Wdeprecated-declarations then
# prints ~29 warnings about code we do not call. Off for this one build only (go
# env's CGO_CFLAGS, -O2 -g by default, kept before it); every other warning stays.
NVML_CGO_CFLAGS  = $(shell $(GO) env CGO_CFLAGS) -Wno-deprecated-declarations
build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o $(BIN)/ ./cmd/am ./cmd/container-launcher
	CGO_CFLAGS="$(NVML_CGO_CFLAGS)" $(GO) build -buildvcs=auto -o $(BIN)/ ./cmd/container-launcher/xres-nvml
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o $(BIN)/ ./cmd/container-launcher/xres-nmrest

# Start the minicluster, run 4 GPU workers over its 2 NodeManagers, show
# each worker's CUDA_VISIBLE_DEVICES, stop the cluster.
demo:
	docker/hadoop-minicluster/demo.sh

# Test runs go through integration/testsummary: plain go test's output, then one closing
# line ("N unit + N race + N integration passed, N failed, N skipped") and every skipped test
# with its reason. Before each go test run, a marker line names the suite and the packages
# with test files in it (go list): a suite, or one of those packages, that reports no test
# result fails the run, whatever go test's exit status (integration/testsummary/summary.go).
SHELL       := bash
SUMMARY     := $(BIN)/testsummary
HAS_TESTS   := {{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}
suite        = echo testsummary-suite $(1) $$($(GO) list $(2) -f '$(HAS_TESTS)' $(3))
# Each leaves its status in a shell variable (u, i): the recipes below combine them. No
# `exit` here: it would end the recipe's shell before the next suite runs.
# The yarn packages (the IPC connection, the clients, the AM's loop and status server, which
# share state across goroutines) run again under the race detector.
UNIT_TESTS  := $(call suite,unit,,$(PKGS)); $(GO) test -json -count=1 $(PKGS); u=$$?; \
	$(call suite,race,,./yarn/...); $(GO) test -json -count=1 -race ./yarn/...; u=$$((u|$$?))
INTEG_TESTS := $(call suite,integration,-tags integration,./integration/); \
	$(GO) test -json -count=1 -tags integration -timeout 60m ./integration/; i=$$?

$(SUMMARY): $(wildcard integration/testsummary/*.go)
	@mkdir -p $(BIN)
	$(GO) build -o $@ ./integration/testsummary

# Unit tests: no Hadoop, no GPU needed.
unit: $(SUMMARY)
	set -o pipefail; { $(UNIT_TESTS); exit $$u; } | TESTSUMMARY_LABEL="make unit" $(SUMMARY)

# Everything: unit tests, then the integration suite against the real Hadoop
# minicluster (started and stopped by integration/'s TestMain), one summary for both.
test: $(SUMMARY)
	set -o pipefail; { $(UNIT_TESTS); $(INTEG_TESTS); exit $$((u|i)); } \
		| TESTSUMMARY_LABEL="make test" $(SUMMARY)

integration: $(SUMMARY)
	set -o pipefail; { $(INTEG_TESTS); exit $$i; } | TESTSUMMARY_LABEL="make integration" $(SUMMARY)

# The randomized soak (integration/soak_test.go): one long application on its own HA cluster
# with 4 NodeManagers under SOAK_S seconds (default 300) of random faults: the RM down 5-120 s,
# RM failover, a NodeManager killed and started, the AM killed, a launcher or worker killed -9,
# an AM<->RM partition of 5-60 s, a slow NodeManager (behind the fault proxy). SOAK_SEED replays a schedule (each run prints its seed); the
# table of faults, survived and invariant violations closes the output (and SOAK_REPORT's file).
# The harness starts that cluster (default ports, so no other may run) in its own state folder.
SOAK_S ?= 300
SOAK_CLUSTER := XRES_MINICLUSTER_DIR=$(CURDIR)/docker/hadoop-minicluster/target/soak XRES_MINICLUSTER_HA=1 \
	XRES_MINICLUSTER_NODEMANAGERS=4 XRES_MINICLUSTER_AM_MAX_ATTEMPTS=50 XRES_MINICLUSTER_NM_EXPIRY_MS=10000 \
	XRES_MINICLUSTER_PROXIED_NODES=3
soak:
	$(SOAK_CLUSTER) SOAK_S=$(SOAK_S) $(GO) test -count=1 -v -tags 'integration soak' -timeout $$(($(SOAK_S) / 60 + 45))m \
		-run '^TestSoak$$' ./integration/

# The launcher under YARN's GPU assignment, randomized (issue 40): YARN_RANDOM launches per mode
# (plugin REST, isolated, Docker indices, pluggable minor numbers) against a stub NodeManager.
YARN_RANDOM ?= 1000
.PHONY: yarn-random
yarn-random:
	XRES_YARN_RANDOM_LAUNCHES=$(YARN_RANDOM) $(GO) test -count=1 -v -timeout 30m -run '^TestYarnAssignmentRandomized$$' ./driver/launch/ \
		| grep -E '^(=== RUN|--- |PASS|FAIL|ok)|launches'

# The core integration subset against each Hadoop version users run (newest 3.1.x, 3.2.x, 3.3.x,
# 3.4.x, 3.5.x; XRES_MATRIX_VERSIONS names others), each built into its own cached folder;
# a table of version, build and test seconds, result (docker/hadoop-minicluster/matrix.sh).
.PHONY: test-matrix
test-matrix: $(SUMMARY)
	docker/hadoop-minicluster/matrix.sh

# Every figure of docs/benchmarks.md's tables, in one run, as one Markdown report
# (bench-report.md; XRES_BENCH_PARTS picks parts): see integration/bench-report.sh.
bench-report:
	GO=$(GO) integration/bench-report.sh

# Includes container-launcher's overhead and 64-launcher contention beside a
# Flink-style flock script (driver/launch; see median-ms, the median per run).
bench:
	$(GO) test -timeout 30m -run '^$$' -bench . -benchmem $(PKGS)

# getClusterMetrics: our RPC client vs Hadoop's Java YarnClient (integration/javabench,
# built with Maven on first use), 1, 8 and 32 callers against the real cluster, then 8
# callers against a second, Kerberized one with hadoop.rpc.protection=privacy (started
# only for that part, on the ports below, so that its JVMs idle on no core while the
# plain rows run; stopped at the end). Settings: see integration/bench_rpc_test.go.
BENCH_SECURE_PORTS ?= XRES_NN_PORT=18120 XRES_NN_HTTP_PORT=19970 XRES_RM_PORT=18132 \
	XRES_RM_SCHEDULER_PORT=18130 XRES_RM_TRACKER_PORT=18131 XRES_RM_ADMIN_PORT=18133 XRES_RM_WEBAPP_PORT=18188
BENCH_RPC := $(GO) test -count=1 -tags integration -timeout 40m -run '^$$' -benchtime 1x ./integration/
bench-rpc:
	$(BENCH_RPC) -bench 'RPCGetClusterMetrics$$'
	@dir=$$(mktemp -d /tmp/xres-bench-secure.XXXXXX) && \
	trap "XRES_MINICLUSTER_DIR=$$dir bash docker/hadoop-minicluster/run.sh stop >/dev/null 2>&1; rm -rf $$dir" EXIT && \
	env XRES_MINICLUSTER_DIR=$$dir XRES_MINICLUSTER_OWNER_PID=$$$$ XRES_RPC_PROTECTION=privacy \
		XRES_MINICLUSTER_NODEMANAGERS=1 $(BENCH_SECURE_PORTS) bash docker/hadoop-minicluster/run.sh start --secure && \
	XRES_BENCH_SECURE_DIR=$$dir $(BENCH_RPC) -bench 'RPCGetClusterMetricsPrivacy'

# am submit vs Hadoop's own DistributedShell (hadoop-yarn-applications-distributedshell 3.4.2,
# via integration/dsbench, built with Maven on first use; XRES_DSHELL_JAR=<jar> names another):
# submit to all 4 GPU workers running, and the AM's peak RSS, against the real cluster.
bench-am:
	$(GO) test -count=1 -tags integration -timeout 40m -run '^$$' -bench 'AMvsDistributedShell' -benchtime 1x -v ./integration/

# The same at N = 4, 16, 64 and 128 (2 rounds each; xres, DistributedShell and the floor, i.e. xres's
# AM with xres.bench.null-worker, rotating), on NodeManagers large enough for 129 containers,
# closing with the scaling curve and each side above the floor; and the AM at 10,000 workers
# in-process (yarn/am: simulated RM and 50 NodeManagers over Hadoop RPC). Every part runs even
# when one fails; the target fails if any did.
bench-am-curve:
	@c=0; \
	XRES_BENCH_WORKERS=$${XRES_BENCH_WORKERS:-4,16,64,128} XRES_BENCH_ROUNDS=$${XRES_BENCH_ROUNDS:-2} \
	XRES_MINICLUSTER_NM_MEMORY_MB=$${XRES_MINICLUSTER_NM_MEMORY_MB:-17408} XRES_MINICLUSTER_NM_VCORES=$${XRES_MINICLUSTER_NM_VCORES:-72} \
	XRES_MINICLUSTER_GPUS=$${XRES_MINICLUSTER_GPUS:-72} \
	$(GO) test -count=1 -tags integration -timeout 80m -run '^$$' -bench 'AMvsDistributedShell' -benchtime 1x -v ./integration/ || c=1; \
	$(GO) test -count=1 -run '^$$' -bench 'AMAt10k' -benchtime 1x ./yarn/am/ || c=1; \
	$(GO) test -count=1 -run '^$$' -bench 'AMAllocateCycle' -benchtime 20x ./yarn/am/ || c=1; \
	if [ $$c -ne 0 ]; then echo "bench-am-curve: a part failed (its output is above)"; fi; exit $$c

# Issue 44's costs, side by side: the AM at 10,000 workers with metrics off and on (GPU samples
# every 10 s, two scrapes), the launcher's CPU with GPU sampling off and on, xres-nvml's work per
# line of samples (docs/benchmarks.md).
.PHONY: bench-metrics
bench-metrics:
	$(GO) test -count=2 -run '^$$' -bench 'AMMetricsAt10k' -benchtime 1x ./yarn/am/
	$(GO) test -count=2 -run '^$$' -bench 'ScrapeAt10k' -benchtime 1x -benchmem ./yarn/ammetrics/
	$(GO) test -count=3 -run '^$$' -bench 'GPUSampling' -benchtime 1x ./driver/launch/
	CGO_CFLAGS="$(NVML_CGO_CFLAGS)" $(GO) test -count=3 -run '^$$' -bench 'SampleLine' ./cmd/container-launcher/xres-nvml/

# Standby spares (slotmanager.redundant-taskmanager-num): kill -9 → the killed rank's command
# running again, promoted spare vs new container, in the same rounds, on the real cluster.
bench-spares:
	$(GO) test -count=1 -tags integration -timeout 20m -run '^$$' -bench 'SparePromotionVsNewContainer' -benchtime 1x -v ./integration/

# Every fuzz target of the module (go test -list '^Fuzz') run as a fuzzer for FUZZTIME each, one
# after the other: a table of target, executions and result, and a closing line with the totals.
# A crash fails it; its input is then in the package's testdata/fuzz/<Target>/ (commit it, and
# plain go test replays it). FUZZ_MATCH picks targets by name (integration/fuzz.sh).
FUZZTIME ?= 20s
.PHONY: fuzz
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) integration/fuzz.sh

# go mod tidy -diff prints (and exits 1 on) what tidy would change in go.mod/go.sum.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "lint: go.mod/go.sum are not tidy: run go mod tidy and commit the result"; exit 1; }
	$(GO) vet $(PKGS)
	$(GO) vet -tags integration ./integration/...
	$(GO) vet -tags "integration soak" ./integration/
	$(GO) vet -tags "integration yarnrandom" ./integration/

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

# The randomized check of YARN's GPU assignment on the minicluster (integration/gpuplugin_random_test.go):
# per mode (YARN_RANDOM_CLUSTER_MODES, default plugin,isolated,docker,pluggable; plugin-off: the launcher
# told not to ask YARN, which must fail the check) at least
# YARN_RANDOM_CLUSTER_LAUNCHES (1000) container-launcher launches in DistributedShell containers of 1-3
# GPUs, some killed -9, each checked against the NodeManager's REST; YARN_RANDOM_CLUSTER_SEED replays.
YARN_RANDOM_CLUSTER_LAUNCHES ?= 1000
YARN_RANDOM_CLUSTER_MODES ?= plugin,isolated,docker,pluggable,plugin-off
.PHONY: yarn-random-cluster
yarn-random-cluster:
	set -o pipefail; XRES_YARN_RANDOM_CLUSTER_LAUNCHES=$(YARN_RANDOM_CLUSTER_LAUNCHES) XRES_YARN_RANDOM_CLUSTER_MODES=$(YARN_RANDOM_CLUSTER_MODES) \
		XRES_YARN_RANDOM_CLUSTER_SEED=$(YARN_RANDOM_CLUSTER_SEED) \
		$(GO) test -count=1 -v -tags 'integration yarnrandom' -timeout 4h -run '^TestYARNRandomCluster$$' ./integration/ \
		| grep -E '^(=== RUN|--- |PASS|FAIL|ok)|randomized check|yarn-random-cluster:|as expected|Error'

# On a host with an NVIDIA GPU (no network, no Hadoop; < 5 min): NVML against
# nvidia-smi, MIG, an event set on every GPU, a launcher's worker seen by
# nvidia-smi on exactly its GPU (integration/devicecheck/device-check.sh).
# XRES_DEVICE_CHECK_FAKE=1 runs it on the fakes.
.PHONY: device-check
device-check: build
	CGO_ENABLED=1 $(GO) build -o $(BIN)/ ./integration/devicecheck/cudaholder
	integration/devicecheck/device-check.sh

# A GPU failing while its worker runs, on the minicluster (issue 43, docs/gpu-health.md):
# GPU_HEALTH_INJECTIONS (20) Xids injected through the fake xres-nvml helper into running
# workers' GPUs, each beside an ordinary failed worker; p50/p95 of both replacement times.
GPU_HEALTH_INJECTIONS ?= 20
.PHONY: gpu-health-cluster
gpu-health-cluster:
	set -o pipefail; XRES_GPU_HEALTH_INJECTIONS=$(GPU_HEALTH_INJECTIONS) \
		$(GO) test -count=1 -v -tags integration -timeout 60m -run '^TestGPUHealth' ./integration/ \
		| grep -E '^(=== RUN|--- |PASS|FAIL|ok)|replacement time|p50|Error|gpuhealth_test'
