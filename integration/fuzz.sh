#!/usr/bin/env bash
# make fuzz: runs every fuzz target of the module (func Fuzz* in a _test.go file, found with
# go test -list) as a fuzzer for FUZZTIME each (default 20s), one after the other; then a table
# of target, executions and result, and a closing line. A crash fails the run: go test has
# written the input to the package's testdata/fuzz/<Target>/ (commit it: plain go test replays
# it from then on) and its output is printed. FUZZ_MATCH (a regexp) picks targets by name.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
FUZZ_MATCH=${FUZZ_MATCH:-.}

# go test -list prints a package's matching names, then "ok <package> <time>".
list=$("$GO" test -list '^Fuzz' ./... 2>&1) || { echo "$list"; echo "make fuzz: go test -list failed"; exit 1; }
targets=()
names=()
while IFS= read -r line; do
	case $line in
	Fuzz*) names+=("$line") ;;
	ok*)
		pkg=$(awk '{print $2}' <<<"$line")
		for n in "${names[@]}"; do
			[[ $n =~ $FUZZ_MATCH ]] && targets+=("$pkg $n")
		done
		names=()
		;;
	esac
done <<<"$list"
if ((${#targets[@]} == 0)); then
	echo "make fuzz: no fuzz target matches $FUZZ_MATCH"
	exit 1
fi

# engine_timeout: the output of a failed fuzz run is the engine's deadline, not a finding
# (a finding always writes its input: "Failing input written to testdata/fuzz/...").
engine_timeout() {
	grep -q 'context deadline exceeded' <<<"$1" && ! grep -q 'Failing input written to' <<<"$1"
}

echo "make fuzz: ${#targets[@]} targets, $FUZZTIME each"
rows=()
crashes=0
total=0
start=$SECONDS
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	out=$("$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1)
	rc=$?
	if ((rc != 0)) && engine_timeout "$out"; then
		# Go's fuzzing engine can end a short -fuzztime with "context deadline exceeded"
		# while a worker is still busy (a loaded machine): no input failed, none was
		# written. Run the target once more; only a written failing input is a crash.
		echo "--- $pkg $name: the fuzzing engine timed out (no failing input); once more"
		out=$("$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1)
		rc=$?
	fi
	execs=$(grep -o 'execs: [0-9]*' <<<"$out" | tail -1 | awk '{print $2}')
	execs=${execs:-0}
	total=$((total + execs))
	result=ok
	if ((rc != 0)); then
		result=CRASH
		crashes=$((crashes + 1))
		echo "--- $pkg $name failed:"
		echo "$out" | tail -40
	fi
	printf '%-48s %-34s %12s  %s\n' "${pkg#github.com/xres/xres/}" "$name" "$execs" "$result"
	rows+=("$(printf '%-48s %-34s %12s  %s' "${pkg#github.com/xres/xres/}" "$name" "$execs" "$result")")
done
echo
printf '%-48s %-34s %12s  %s\n' package target executions result
printf '%s\n' "${rows[@]}"
echo "make fuzz: ${#targets[@]} targets, $total executions, $crashes crashes, $((SECONDS - start)) s ($FUZZTIME each)"
((crashes == 0))
