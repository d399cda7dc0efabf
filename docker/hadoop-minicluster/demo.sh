#!/usr/bin/env bash
# xres demo: start the Hadoop minicluster (2 NodeManagers with 2 GPUs each,
# all on this host), submit 4 workers with external-resource.gpu.amount: 1,
# show which NodeManager (host:port) ran each worker and its
# CUDA_VISIBLE_DEVICES (am submit's closing table, and each worker's own
# line; host coordination gives the 4 workers 4 distinct GPUs), and stop
# the cluster.
#
# There are no real GPUs here: the workers find a fake nvidia-smi first on
# their PATH (driver/gpu/testdata/fakebin), reporting 4 GPUs on the host.
#
#   docker/hadoop-minicluster/demo.sh            build bin/am and bin/container-launcher, run the demo
#   KEEP_CLUSTER=1 docker/hadoop-minicluster/demo.sh   leave the cluster running afterwards
#
# The minicluster settings (XRES_MINICLUSTER_DIR, ports, …) are those of
# docker/hadoop-minicluster/run.sh.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN="$ROOT/docker/hadoop-minicluster/run.sh"
WORK=${XRES_MINICLUSTER_DIR:-$ROOT/docker/hadoop-minicluster/work}
BIN=${BIN:-$ROOT/bin}

mkdir -p "$BIN"
make -s -C "$ROOT" build BIN="$BIN"

started=no
if ! "$RUN" status >/dev/null 2>&1; then
	"$RUN" start
	started=yes
fi
stop() {
	if [ "$started" = yes ] && [ -z "${KEEP_CLUSTER:-}" ]; then
		"$RUN" stop || true
	fi
}
trap stop EXIT

# shellcheck disable=SC1091
. "$WORK/cluster.env"
export HADOOP_CONF_DIR=$XRES_HADOOP_CONF_DIR

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; stop' EXIT
cat >"$tmp/flink-conf.yaml" <<EOF
external-resources: gpu
external-resource.gpu.amount: 1
external-resource.gpu.yarn.config-key: yarn.io/gpu
external-resource.gpu.driver-factory.class: org.apache.flink.externalresource.gpu.GPUDriverFactory
external-resource.gpu.param.coordination.file: $tmp/coordination.state
taskmanager.memory.process.size: 256m
yarn.heartbeat.interval: 1
containerized.taskmanager.env.PATH: $ROOT/driver/gpu/testdata/fakebin:/usr/local/bin:/usr/bin:/bin
containerized.taskmanager.env.XRES_FAKE_GPUS: 4
EOF

echo "== the cluster"
"$BIN/am" cluster
echo
echo "== what the workers ask for"
"$BIN/am" resources --conf "$tmp/flink-conf.yaml" --workers 4
echo
echo "== submit 4 workers"
# The workers sleep a little so that all four hold their GPU at once.
"$BIN/am" submit --conf "$tmp/flink-conf.yaml" --workers 4 --name xres-demo -- \
	sh -c 'echo "worker on NodeManager $NM_HOST:$NM_PORT (container $CONTAINER_ID): CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; sleep 5' |
	tee "$tmp/submit.out"
app=$(sed -n 's/^submitted \(application_[0-9_]*\).*/\1/p' "$tmp/submit.out")
echo
echo "== each worker's binding (container stdout in the NodeManagers' log folders)"
for v in $(compgen -A variable | grep '^XRES_NM[0-9]*_LOG_DIRS$'); do
	for dir in ${!v//,/ }; do
		for f in "$dir/$app"/container_*/stdout; do
			[ -s "$f" ] && cat "$f"
		done
	done
done | grep '^worker on' | sort
grep -q 'finished: FINISHED SUCCEEDED' "$tmp/submit.out"
