#!/usr/bin/env bash
# A discovery script written for xres's tests that follows the calling
# convention and options of Flink's nvidia-gpu-discovery.sh:
#   flink-style-discovery.sh <amount> [--enable-coordination-mode] [--coordination-file F]
# Unknown options are ignored, as Flink's script does. It asks nvidia-smi for
# the indices; in coordination mode it records "<index> <owner pid>" lines in
# F under flock, the owner being the process that ran the script ($PPID).
set -u
if [ $# -lt 1 ]; then
	echo "usage: $0 <amount> [--enable-coordination-mode] [--coordination-file F]"
	exit 1
fi
amount=$1
shift
coordinate=no
file=/var/tmp/flink-gpu-coordination
while [ $# -gt 0 ]; do
	case $1 in
	--enable-coordination-mode) coordinate=yes ;;
	--coordination-file) file=$2; shift ;;
	*) ;;
	esac
	shift
done
[ "$amount" -eq 0 ] && exit 0
indices=$(nvidia-smi --query-gpu=index --format=csv,noheader) || exit 1
pick=()
if [ "$coordinate" = no ]; then
	for i in $indices; do
		[ ${#pick[@]} -lt "$amount" ] && pick+=("$i")
	done
else
	exec 9<>"$file" || exit 1
	flock -x 9 || exit 1
	for i in $indices; do
		[ ${#pick[@]} -ge "$amount" ] && break
		owner=$(awk -v i="$i" '$1 == i { print $2 }' "$file")
		if [ -z "$owner" ] || ! kill -0 "$owner" 2>/dev/null; then
			pick+=("$i")
		fi
	done
	if [ ${#pick[@]} -ge "$amount" ]; then
		awk -v keep=" ${pick[*]} " 'index(keep, " " $1 " ") == 0' "$file" >"$file.new"
		for i in "${pick[@]}"; do echo "$i $PPID" >>"$file.new"; done
		cat "$file.new" >"$file" # rewrite in place: the locked inode stays
		rm -f "$file.new"
	fi
fi
if [ ${#pick[@]} -lt "$amount" ]; then
	echo "Could not get enough GPU resources."
	exit 1
fi
(IFS=,; echo "${pick[*]}")
