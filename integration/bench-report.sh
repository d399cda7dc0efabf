#!/usr/bin/env bash
# make bench-report: every comparison benchmark docs/benchmarks.md quotes, in one run,
# written as one Markdown report (stdout, and $XRES_BENCH_REPORT, default bench-report.md):
#
#   launcher   driver/launch: full launch and probe vs the Flink-style script, 64 launchers on 8 GPUs
#   am-10k     yarn/am: the AM at 10,000 workers in-process, CPU per allocate cycle
#   rpc        make bench-rpc: getClusterMetrics vs Java's YarnClient (1, 8, 32 callers; privacy)
#   am         make bench-am-curve: submit → N worker commands running vs DistributedShell and the floor (N = 4, 16, 64, 128)
#   spares     make bench-spares: kill -9 → the rank running again, standby spare vs new container
#
# XRES_BENCH_PARTS picks some (default: all five, in that order); the cluster parts need what
# make test needs (JDK 17, Maven). The machine's load is printed before and after each part:
# rerun on a quiet machine before quoting a figure.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${XRES_BENCH_REPORT:-bench-report.md}
parts=${XRES_BENCH_PARTS:-launcher am-10k rpc am spares}
tmp=$(mktemp -d /tmp/xres-bench-report.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
go=${GO:-go}

load() { cut -d' ' -f1-3 /proc/loadavg; }

{
  echo "# xres benchmark report"
  echo
  echo "- commit: $(git describe --always --dirty 2>/dev/null || echo unknown)"
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), load average at start $(load)"
} >"$out"

section() { # title, then the command's output as a code block, with load before and after
  local title=$1 file=$2 before=$3
  {
    echo
    echo "## $title"
    echo
    echo "load average before: $before, after: $(load)"
    echo
    echo '```'
    cat "$file"
    echo '```'
  } >>"$out"
}

for p in $parts; do
  before=$(load)
  case $p in
  launcher)
    # The single launches vary with the machine from run to run: 150 interleaved rounds.
    { "$go" test -count=1 -run '^$' -bench 'LauncherOverhead' -benchtime 150x ./driver/launch/ &&
      "$go" test -count=1 -run '^$' -bench 'Contention64' -benchtime 5x ./driver/launch/; } >"$tmp/launcher.txt" 2>&1
    section "Launcher: xres vs a Flink-style coordination script (same fake nvidia-smi host)" "$tmp/launcher.txt" "$before"
    ;;
  am-10k)
    "$go" test -count=1 -run '^$' -bench 'AMAt10k|AMAllocateCycle' -benchtime 1x ./yarn/am/ >"$tmp/am10k.txt" 2>&1
    section "ApplicationMaster at 10,000 workers (in-process RM and NodeManagers over Hadoop RPC)" "$tmp/am10k.txt" "$before"
    ;;
  rpc)
    XRES_BENCH_OUT="$tmp/rpc.md" make -s bench-rpc >"$tmp/rpc.log" 2>&1 || { tail -40 "$tmp/rpc.log"; exit 1; }
    section "Hadoop RPC: xres vs Java YarnClient" "$tmp/rpc.md" "$before"
    ;;
  am)
    XRES_BENCH_OUT="$tmp/am.md" make -s bench-am-curve >"$tmp/am.log" 2>&1 || { tail -40 "$tmp/am.log"; exit 1; }
    cp "$tmp/am.md" "$tmp/am-all.md"
    grep -E '^(Benchmark|ok|PASS)' "$tmp/am.log" >>"$tmp/am-all.md" || true
    section "am submit vs DistributedShell on the minicluster" "$tmp/am-all.md" "$before"
    ;;
  spares)
    make -s bench-spares >"$tmp/spares.log" 2>&1 || { tail -40 "$tmp/spares.log"; exit 1; }
    grep -E 'round [0-9]|median of|^Benchmark' "$tmp/spares.log" >"$tmp/spares.txt" || true
    section "Standby spares: kill -9 → the killed rank's command running again, promoted spare vs new container" "$tmp/spares.txt" "$before"
    ;;
  *)
    echo "bench-report: unknown part '$p' in XRES_BENCH_PARTS (want launcher, am-10k, rpc, am, spares)" >&2
    exit 2
    ;;
  esac
done
cat "$out"
echo "bench-report: written to $out" >&2
