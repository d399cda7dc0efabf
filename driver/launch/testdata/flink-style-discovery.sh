#!/usr/bin/env bash
# Benchmark peer: GPU discovery coordinated the way Apache Flink's discovery
# script does it, written from the algorithm (research note §3.3), not
# copied. Usage: flink-style-discovery.sh <amount> [--enable-coordination-mode]
# [--coordination-file FILE]. Prints the chosen indices comma-separated.
#
# Coordination: an exclusive flock on the coordination file itself; the file
# holds "<index> <owner pid>" lines, the owner being the caller ($PPID).
# Pass 1 takes indices without a line; pass 2 reclaims indices whose owner
# `ps` does not show. Chosen indices are appended. (The delete here is
# anchored; Flink's is not, which only matters past 10 GPUs.)
amount=$1
shift
mode=off
file=/var/tmp/flink-gpu-coordination
while [ $# -gt 0 ]; do
	case $1 in
	--enable-coordination-mode) mode=on ;;
	--coordination-file) file=$2; shift ;;
	esac
	shift
done
all=$(nvidia-smi --query-gpu=index --format=csv,noheader) || exit 1
all=$(echo $all)

if [ "$mode" = off ]; then
	picked=()
	for i in $all; do
		[ "${#picked[@]}" -ge "$amount" ] && break
		picked+=("$i")
	done
	if [ "${#picked[@]}" -lt "$amount" ]; then
		echo "Could not get enough GPU resources."
		exit 1
	fi
	(IFS=,; echo "${picked[*]}")
	exit 0
fi

(
	flock -x 200
	picked=()
	taken=()
	for i in $all; do
		[ "${#picked[@]}" -ge "$amount" ] && break
		if [ "$(grep -c "^$i " "$file")" -eq 0 ]; then
			picked+=("$i")
		else
			taken+=("$i")
		fi
	done
	for i in "${taken[@]}"; do
		[ "${#picked[@]}" -ge "$amount" ] && break
		owner=$(grep "^$i " "$file" | awk '{print $2}')
		if ! ps -p "$owner" | grep -q "$owner"; then
			sed -i "/^$i /d" "$file"
			picked+=("$i")
		fi
	done
	if [ "${#picked[@]}" -lt "$amount" ]; then
		echo "Could not get enough GPU resources."
		exit 1
	fi
	for i in "${picked[@]}"; do
		echo "$i $PPID" >>"$file"
	done
	(IFS=,; echo "${picked[*]}")
) 200<>"$file"
