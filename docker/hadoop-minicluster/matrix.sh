#!/usr/bin/env bash
# Hadoop version matrix (make test-matrix): for each version, build the launcher (its own
# cached build folder, target/hadoop-<version>), then run the core integration subset against a
# cluster of that version (the harness starts and stops it, state under target/matrix/<version>):
# the node list with GPUs on distinct hosts, am submit of the demo (4 GPU workers), fail-fast on
# an impossible profile, status and kill, REST submit and kill. Ends with a table (version,
# build seconds, test seconds, result) and one closing line over all versions.
#
# Settings (environment):
#   XRES_MATRIX_VERSIONS  versions to run (default: the newest 3.1.x, 3.2.x, 3.3.x, 3.4.x and
#                         3.5.x Maven Central serves: 3.1.4 3.2.4 3.3.6 3.4.2 3.5.0)
#   XRES_MATRIX_TESTS     go test -run pattern of the subset (default below)
# The cluster uses run.sh's default ports unless its XRES_*_PORT settings are set here (they
# reach run.sh through the harness): run it while no other cluster holds them.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
read -r -a VERSIONS <<< "${XRES_MATRIX_VERSIONS:-3.1.4 3.2.4 3.3.6 3.4.2 3.5.0}"
TESTS=${XRES_MATRIX_TESTS:-'^(TestNodeManagersOfferGPUs|TestClusterDistinctHosts|TestAMSubmitDemo|TestAMSubmitFailsFast|TestAMClusterStatusKill|TestRESTSubmitAndKill)$'}
SUMMARY=$ROOT/bin/testsummary
GO=${GO:-go}

say() { echo "test-matrix: $*" >&2; }

[[ -x $SUMMARY ]] || { say "error: $SUMMARY missing (make test-matrix builds it)"; exit 1; }
((${#VERSIONS[@]})) || { say "error: XRES_MATRIX_VERSIONS is empty"; exit 1; }
for v in "${VERSIONS[@]}"; do
  [[ $v =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { say "error: XRES_MATRIX_VERSIONS: '$v' is not a version such as 3.3.6"; exit 1; }
done

rows=() passed=0 failed=0 skipped=0 bad=0
for v in "${VERSIONS[@]}"; do
  dir=$HERE/target/matrix/$v
  rm -rf "$dir"
  mkdir -p "$dir"
  say "Hadoop $v: building the launcher (log $dir/deps.log)"
  t0=$SECONDS
  if ! XRES_HADOOP_VERSION=$v bash "$HERE/run.sh" deps > "$dir/deps.log" 2>&1; then
    why=$(grep -m1 'error:' "$dir/deps.log" || tail -n1 "$dir/deps.log")
    say "Hadoop $v: cannot build: $why"
    rows+=("$v|$((SECONDS - t0))|-|cannot build: $why")
    bad=$((bad + 1))
    continue
  fi
  build=$((SECONDS - t0))
  say "Hadoop $v: running the subset (log $dir/test.log)"
  t0=$SECONDS
  (cd "$ROOT" && XRES_HADOOP_VERSION=$v XRES_MINICLUSTER_DIR=$dir/work XRES_TEST_LOGS=$dir/logs \
    "$GO" test -json -count=1 -tags integration -timeout 30m -run "$TESTS" ./integration/) 2>&1 \
    | TESTSUMMARY_LABEL="Hadoop $v" "$SUMMARY" > "$dir/test.log" 2>&1
  rc=$?
  line=$(grep -m1 "^Hadoop $v: " "$dir/test.log" || echo "Hadoop $v: no closing line")
  echo "$line"
  if ((rc != 0)); then
    # What failed, and the cluster's own reason if it never started.
    grep -E -- '^--- FAIL|^integration: FAIL|minicluster: error|^FAIL|\.go:[0-9]+:[0-9]+: ' "$dir/test.log" | head -n 8 >&2
    bad=$((bad + 1))
  fi
  if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)? ]]; then
    passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2])) skipped=$((skipped + ${BASH_REMATCH[4]:-0}))
    # A package that failed with no test failed (a build error, no cluster) counts as one.
    ((rc == 0 || BASH_REMATCH[2] > 0)) || failed=$((failed + 1))
  else
    failed=$((failed + 1))
  fi
  rows+=("$v|$build|$((SECONDS - t0))|${line#Hadoop $v: }")
done

echo
printf '%-8s %8s %8s  %s\n' version build_s tests_s result
for r in "${rows[@]}"; do
  IFS='|' read -r v b t res <<< "$r"
  printf '%-8s %8s %8s  %s\n' "$v" "$b" "$t" "$res"
done
echo "test-matrix: $passed passed, $failed failed, $skipped skipped"
((bad == 0))
