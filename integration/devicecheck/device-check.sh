#!/usr/bin/env bash
# make device-check: xres on a real NVIDIA host, in under 5 minutes, with no
# network and no Hadoop (docs/gpu-health.md, "Device check"). Checks:
#   1. NVML's listing (xres-nvml) names the GPUs nvidia-smi names (uuids);
#   2. MIG, if a GPU is in MIG mode: xres-nvml --mig lists the instances
#      nvidia-smi -L lists;
#   3. `xres-nvml watch` registers its event set on every GPU (its ready
#      line names each as watched);
#   4. container-launcher gives a worker one GPU (amount 1, host
#      coordination in a private state file), and nvidia-smi sees that
#      worker's CUDA context on exactly that GPU.
# Binaries: $BIN (default bin/: make build) and $BIN/cudaholder.
#
# XRES_DEVICE_CHECK_FAKE=1 runs the same steps on the fakes (no GPU): fake
# nvidia-smi (driver/gpu/testdata/fakebin, $XRES_FAKE_GPUS GPUs), the fake
# xres-nvml (driver/gpu/testdata/fake-xres-nvml) and, for the worker, a
# shell that records itself as a compute process of the GPU
# CUDA_VISIBLE_DEVICES names, in a file a wrapper nvidia-smi answers
# --query-compute-apps from. It checks the script and the launcher, not
# NVML or CUDA.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BIN=${BIN:-$root/bin}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xres-device-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
pass() { echo "PASS  $*"; }
fail() { echo "FAIL  $*"; fails=$((fails + 1)); }
info() { echo "      $*"; }
t() { timeout "${STEP_TIMEOUT:-60}" "$@"; }

launcher=$BIN/container-launcher
helper=$BIN/xres-nvml
holder=$BIN/cudaholder
if [ "${XRES_DEVICE_CHECK_FAKE:-}" = 1 ]; then
	echo "device-check on the FAKES (XRES_DEVICE_CHECK_FAKE=1): no NVML, no CUDA is exercised"
	export XRES_FAKE_GPUS=${XRES_FAKE_GPUS:-2} XRES_FAKE_NVML_LIST=1 XRES_FAKE_NVML_EVENTS=$tmp/events
	mkdir -p "$tmp/fakebin"
	apps=$tmp/compute-apps
	: >"$apps"
	cat >"$tmp/fakebin/nvidia-smi" <<EOS
#!/bin/sh
case "\$*" in
*--query-compute-apps=*) cat '$apps' ;;
*) exec '$root/driver/gpu/testdata/fake-nvidia-smi' "\$@" ;;
esac
EOS
	# The fake worker: records its pid on the GPU it was given.
	cat >"$tmp/fakebin/cudaholder" <<EOS
#!/bin/sh
v=\${CUDA_VISIBLE_DEVICES%%,*}
case "\$v" in GPU-*) u=\$v ;; *) u=\$(nvidia-smi --query-gpu=index,uuid --format=csv,noheader | awk -F', ' -v i="\$v" '\$1 == i {print \$2}') ;; esac
[ -n "\$u" ] || { echo "fake cudaholder: CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES names no GPU" >&2; exit 1; }
echo "\$\$, \$u" >>'$apps'
echo "holding \$\$"
while [ ! -e "\$1" ]; do sleep 0.1; done
EOS
	chmod +x "$tmp/fakebin/nvidia-smi" "$tmp/fakebin/cudaholder"
	export PATH=$tmp/fakebin:$PATH
	helper=$root/driver/gpu/testdata/fake-xres-nvml
	holder=$tmp/fakebin/cudaholder
	source=nvidia-smi
else
	source=nvml
fi
for b in "$launcher" "$helper" "$holder"; do
	[ -x "$b" ] || { echo "FAIL  $b is missing: run make build (and make device-check builds cudaholder)"; exit 1; }
done
command -v nvidia-smi >/dev/null || { echo "FAIL  nvidia-smi is not on PATH"; exit 1; }

# 1. NVML's listing against nvidia-smi's.
smi_uuids=$(t nvidia-smi --query-gpu=uuid --format=csv,noheader | sort)
listing=$(t "$helper")
nvml_uuids=$(printf '%s' "$listing" | grep -o '"uuid":"GPU-[^"]*"' | cut -d'"' -f4 | sort)
n=$(printf '%s\n' "$smi_uuids" | grep -c . || true)
if [ "$n" -gt 0 ] && [ "$smi_uuids" = "$nvml_uuids" ]; then
	pass "NVML lists the $n GPUs nvidia-smi lists"
else
	fail "NVML and nvidia-smi disagree"; info "nvidia-smi: $(echo $smi_uuids)"; info "NVML:       $(echo $nvml_uuids)"
fi

# 2. MIG, if present.
if t nvidia-smi --query-gpu=mig.mode.current --format=csv,noheader 2>/dev/null | grep -q Enabled; then
	smi_migs=$(t nvidia-smi -L | grep -o 'MIG-[0-9a-f-]*' | sort)
	nvml_migs=$(t "$helper" --mig | grep -o '"uuid":"MIG-[^"]*"' | cut -d'"' -f4 | sort)
	if [ -n "$smi_migs" ] && [ "$smi_migs" = "$nvml_migs" ]; then
		pass "MIG: NVML lists the $(echo "$smi_migs" | wc -l) instances nvidia-smi lists"
	else
		fail "MIG: NVML and nvidia-smi disagree"; info "nvidia-smi: $(echo $smi_migs)"; info "NVML:       $(echo $nvml_migs)"
	fi
else
	pass "MIG: no GPU in MIG mode (nothing to compare)"
fi

# 3. An event set on every GPU.
# Its stdin a pipe already at its end: watch registers, prints its ready
# line, sees its lifeline gone and ends.
ready=$(: | t "$helper" watch 2>"$tmp/watch.err" | head -n 1 || true)
watched=$(printf '%s' "$ready" | sed -n 's/.*"watched":\[\([^]]*\)\].*/\1/p' | tr -d '"' | tr ',' '\n' | sort)
unwatched=$(printf '%s' "$ready" | sed -n 's/.*"unwatched":\[\([^]]*\)\].*/\1/p' | tr -d '"')
case "$ready" in
*'"type":"ready"'*)
	if [ "$watched" = "$smi_uuids" ]; then
		pass "xres-nvml watch registered Xid and double-bit ECC events on all $n GPUs"
	else
		fail "xres-nvml watch does not watch every GPU"; info "watched: $(echo $watched)"; info "unwatched (no such events): $unwatched"
	fi ;;
*) fail "xres-nvml watch did not start: ${ready:-no output} $(cat "$tmp/watch.err")" ;;
esac

# 4. A launcher gives a worker one GPU; nvidia-smi sees its process there.
cat >"$tmp/flink-conf.yaml" <<EOC
external-resources: gpu
external-resource.gpu.amount: 1
external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory
external-resource.gpu.param.discovery.source: $source
external-resource.gpu.param.coordination.file: $tmp/coord/state
EOC
env -u CUDA_VISIBLE_DEVICES "$launcher" --conf "$tmp/flink-conf.yaml" -- sh -c \
	'echo "visible $CUDA_VISIBLE_DEVICES"; exec "$0" "$1"' "$holder" "$tmp/end" >"$tmp/worker.out" 2>"$tmp/worker.err" &
lpid=$!
pid=''
for _ in $(seq 1 600); do
	pid=$(sed -n 's/^holding //p' "$tmp/worker.out")
	[ -n "$pid" ] && break
	kill -0 "$lpid" 2>/dev/null || break
	sleep 0.1
done
visible=$(sed -n 's/^visible //p' "$tmp/worker.out")
if [ -z "$pid" ]; then
	fail "the worker did not start holding a GPU"; info "$(cat "$tmp/worker.out" "$tmp/worker.err")"
else
	case "$visible" in
	GPU-*) want=$visible ;;
	*) want=$(t nvidia-smi --query-gpu=index,uuid --format=csv,noheader | awk -F', ' -v i="$visible" '$1 == i {print $2}') ;;
	esac
	seen=''
	for _ in $(seq 1 100); do
		seen=$(t nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader | awk -F', ' -v p="$pid" '$1 == p {print $2}' | sort -u)
		[ -n "$seen" ] && break
		sleep 0.1
	done
	if [ "$(echo "$visible" | tr ',' '\n' | grep -c .)" = 1 ] && [ -n "$want" ] && [ "$seen" = "$want" ]; then
		pass "the launcher gave its worker one GPU ($visible = $want) and nvidia-smi sees worker pid $pid on exactly that GPU"
	else
		fail "worker pid $pid: CUDA_VISIBLE_DEVICES=$visible ($want), nvidia-smi sees it on: ${seen:-no GPU}"
	fi
fi
touch "$tmp/end"
if wait "$lpid"; then :; else info "launcher exited $?: $(tail -n 3 "$tmp/worker.err")"; fi

if [ "$fails" -gt 0 ]; then
	echo "device-check: $fails check(s) failed"
	exit 1
fi
echo "device-check: all passed"
