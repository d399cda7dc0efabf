#!/usr/bin/env bash
# xres test cluster: a real Hadoop (1 NameNode, 1 DataNode, 1 ResourceManager (2 with --ha),
# 2 NodeManagers on their own hosts 127.0.0.2, 127.0.0.3, ... offering yarn.io/gpu and
# yarn.io/fpga) in one JVM, from Maven Central artifacts.
#
#   run.sh deps        check JDK 17 + Maven, download the artifacts, build the launcher (cached)
#   run.sh start       build if needed, start in the background, wait until ready, print where
#                      the client configuration (HADOOP_CONF_DIR) is
#   run.sh start --secure   the same with Kerberos (XRES_SECURE=1): a KDC in the JVM, keytabs
#                      and krb5.conf under the state folder, SPNEGO on the web apps
#   run.sh stop        stop it (SIGTERM, then SIGKILL after a grace period)
#   run.sh status      exit 0 if running and ready, 3 if not running, 1 if starting or broken
#   run.sh logs [N]    last N lines (default 100) of the cluster's logs
#   run.sh env         print the cluster's addresses as shell assignments (cluster.env)
#   run.sh foreground  build if needed and run in the foreground (Docker's entry point)
#   run.sh start --ha  the HA profile (XRES_MINICLUSTER_HA=1): two RMs, rm1 active, rm2 standby
# Fault verbs (each returns once the RM's REST API shows the effect; exit 1 with the reason if not):
#   run.sh rm-restart [--down SECONDS]  stop the active RM, leave it down SECONDS (default 0),
#                      start a fresh one on the same state store (work-preserving: containers
#                      keep running, NodeManagers re-register)
#   run.sh rm-stop     stop the active RM and leave it down (no active RM: clients retry)
#   run.sh rm-start    start the RM rm-stop stopped, on the same state store, as rm-restart
#   run.sh rm-failover HA profile: the active RM goes standby, the other one active
#   run.sh nm-kill N   NodeManager N (0-based) dies with its containers, without telling the RM;
#                      returns when the RM marks the node LOST
#   run.sh nm-start N  start NodeManager N again (same host and port: same node id); RUNNING
#   run.sh nm-list     index, node id, RM state, web address, labels, process of each NodeManager
#
# Settings (environment):
#   XRES_HADOOP_VERSION         Hadoop artifacts to use (default 3.4.1; 3.1 or newer, all on JDK 17;
#                               3.1.x builds with the pom's hadoop-3.1 profile, chosen by
#                               -Dxres.hadoop.line; see docs/minicluster.md's version table; HADOOP_VERSION
#                               is read too)
#   JAVA_HOME                   a JDK 17; if unset, a JDK 17 is looked for in /usr/lib/jvm and on PATH
#   XRES_MINICLUSTER_DIR        state folder: conf/, logs, pid file, HDFS and NodeManager dirs
#                               (default: docker/hadoop-minicluster/work)
#   XRES_MINICLUSTER_TIMEOUT    seconds to wait for readiness (default 240)
#   XRES_MINICLUSTER_MVN_TIMEOUT seconds Maven may take (default 1800)
#   XRES_MINICLUSTER_GPUS / _FPGAS / _NODEMANAGERS   per-NodeManager yarn.io/gpu (2),
#                               yarn.io/fpga (1), NodeManager count (2)
#   XRES_MINICLUSTER_NM_MEMORY_MB / _NM_VCORES       per-NodeManager capacity (4096 / 8)
#   XRES_MINICLUSTER_HA         1: the HA profile (as start --ha); 0 or unset: one RM
#   XRES_MINICLUSTER_LABEL_NODES NodeManager indexes carrying the node label gpu, e.g. 1 or 0,2
#                               (default none; the label exists and queue default may use it)
#   XRES_MINICLUSTER_PROXIED_NODES NodeManager indexes, e.g. 1 or 0,2, whose servers bind on
#                               127.1.0.(N+2) while their node id stays 127.0.0.(N+2):port: AMs
#                               reach them only through a proxy a test runs there (harness NMProxy)
#   XRES_MINICLUSTER_NM_EXPIRY_MS yarn.nm.liveness-monitor.expiry-interval-ms (10000): nm-kill's LOST
#   XRES_MINICLUSTER_AM_EXPIRY_MS yarn.am.liveness-monitor.expiry-interval-ms (unset: Hadoop's
#                               600000): how long an AM may be silent (partitioned) before the RM
#                               expires its attempt; at least 2000
#   XRES_MINICLUSTER_RM_SCHEDULING_WAIT_MS yarn.resourcemanager.work-preserving-recovery.
#                               scheduling-wait-ms (Hadoop's 10000): after an RM restart, how long
#                               it waits for NodeManagers before allocating
#   XRES_MINICLUSTER_AMRM_ROLL_SECS AMRMToken master-key rolling interval (unset: Hadoop's 1 day;
#                               at least 10; the AM expiry interval becomes a third of it)
#   XRES_MINICLUSTER_AM_MAX_ATTEMPTS yarn.resourcemanager.am.max-attempts (1): AM attempts allowed
#   XRES_MINICLUSTER_LOG_AGGREGATION off (default): yarn.log-aggregation-enable=false; none or gz:
#                               on, TFile blocks compressed so, uploaded to HDFS /tmp/logs at app end
#   XRES_MINICLUSTER_DT_MAX_LIFETIME_MS dfs.namenode.delegation.token.max-lifetime (unset: Hadoop's
#                               604800000, 7 days; at least 10000): an HDFS delegation token's max life
#   XRES_MINICLUSTER_DT_RENEW_INTERVAL_MS dfs.namenode.delegation.token.renew-interval (unset: Hadoop's
#                               86400000, 1 day; at least 10000): how long a token lives unrenewed
#   XRES_MINICLUSTER_GPU_MODE   counted (default: yarn.io/gpu is a number per NodeManager), plugin
#                               (YARN's GPU plugin assigns GPUs; fake nvidia-smi discovery), isolated
#                               (plugin + simulated devices cgroup), docker (plugin + the Docker
#                               runtime's NVIDIA_VISIBLE_DEVICES, simulated), pluggable (nvidia.com/gpu
#                               of the pluggable device framework, Docker runtime); see the README's NodeManager modes
#   XRES_MINICLUSTER_GPU_MINORS plugin modes: minor numbers of GPU index 0,1,... per NodeManager
#                               (default: index k has minor 2*((k+1) mod GPUs), e.g. 2,0)
#   XRES_FAKE_NVIDIA_SMI        plugin modes: the fake nvidia-smi (default: the repository's
#                               driver/gpu/testdata/fake-nvidia-smi)
#   XRES_MINICLUSTER_VERB_TIMEOUT seconds a fault verb may take (default 200)
#   XRES_MINICLUSTER_HTTP_POLICY HTTP_ONLY (default) or HTTPS_ONLY: yarn.http.policy; HTTPS with a
#                               self-signed certificate (its PEM: XRES_SSL_CERT in cluster.env)
#   XRES_MINICLUSTER_WEB_PROXY  1: a standalone web proxy (yarn.web-proxy.address, XRES_WEB_PROXY_URL)
#   XRES_MINICLUSTER_AMRMPROXY  1: the NodeManagers' AMRMProxy (yarn.nodemanager.amrmproxy.enabled);
#                               containers get node-conf/ as HADOOP_CONF_DIR, naming it as scheduler
#   XRES_RPC_PROTECTION         hadoop.rpc.protection: authentication (default), integrity
#                               or privacy (SASL qop auth, auth-int, auth-conf)
#   XRES_SECURE                 1: the secure profile (as start --secure); 0 or unset: simple auth
#   XRES_MINICLUSTER_OWNER_PID  the cluster stops by itself once this process ends (tests set it)
#   XRES_NN_PORT (8020) XRES_NN_HTTP_PORT (9870) XRES_RM_PORT (8032) XRES_RM_SCHEDULER_PORT (8030)
#   XRES_RM_TRACKER_PORT (8031) XRES_RM_ADMIN_PORT (8033) XRES_RM_WEBAPP_PORT (8088)
#   HA profile's rm2: XRES_RM2_PORT (18032) XRES_RM2_SCHEDULER_PORT (18030)
#   XRES_RM2_TRACKER_PORT (18031) XRES_RM2_ADMIN_PORT (18033) XRES_RM2_WEBAPP_PORT (18088)
#   XRES_MINICLUSTER_JAVA_OPTS  extra JVM options (default heap: -Xms256m -Xmx1g)
#   XRES_MINICLUSTER_STOP_GRACE seconds between SIGTERM and SIGKILL on stop (default 30)
#   XRES_MINICLUSTER_BUILD_DIR  cached launcher build (default target/hadoop-$HADOOP_VERSION)
#   XRES_MINICLUSTER_JVM_DIRS   folders searched for a JDK 17 when JAVA_HOME is not one
#                               (default /usr/lib/jvm)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HADOOP_VERSION=${XRES_HADOOP_VERSION:-${HADOOP_VERSION:-3.4.1}}
WORK=${XRES_MINICLUSTER_DIR:-$HERE/work}
BUILD=${XRES_MINICLUSTER_BUILD_DIR:-$HERE/target/hadoop-$HADOOP_VERSION}
JVM_DIRS=${XRES_MINICLUSTER_JVM_DIRS:-/usr/lib/jvm}
STOP_GRACE=${XRES_MINICLUSTER_STOP_GRACE:-30}
PIDFILE=$WORK/minicluster.pid
STDOUT=$WORK/stdout.log
LOG=$WORK/minicluster.log
OUT=$WORK/minicluster.out
READY_TIMEOUT=${XRES_MINICLUSTER_TIMEOUT:-240}
VERB_TIMEOUT=${XRES_MINICLUSTER_VERB_TIMEOUT:-200}
MVN_TIMEOUT=${XRES_MINICLUSTER_MVN_TIMEOUT:-1800}
MAIN=io.xres.minicluster.Main

# name=port pairs, in launcher option order; each is checked before starting.
PORTS=(
  "nn-port:XRES_NN_PORT:${XRES_NN_PORT:-8020}"
  "nn-http-port:XRES_NN_HTTP_PORT:${XRES_NN_HTTP_PORT:-9870}"
  "rm-port:XRES_RM_PORT:${XRES_RM_PORT:-8032}"
  "rm-scheduler-port:XRES_RM_SCHEDULER_PORT:${XRES_RM_SCHEDULER_PORT:-8030}"
  "rm-tracker-port:XRES_RM_TRACKER_PORT:${XRES_RM_TRACKER_PORT:-8031}"
  "rm-admin-port:XRES_RM_ADMIN_PORT:${XRES_RM_ADMIN_PORT:-8033}"
  "rm-webapp-port:XRES_RM_WEBAPP_PORT:${XRES_RM_WEBAPP_PORT:-8088}"
)
# The HA profile's second RM; added to PORTS by check_settings when HA is on.
RM2_PORTS=(
  "rm2-port:XRES_RM2_PORT:${XRES_RM2_PORT:-18032}"
  "rm2-scheduler-port:XRES_RM2_SCHEDULER_PORT:${XRES_RM2_SCHEDULER_PORT:-18030}"
  "rm2-tracker-port:XRES_RM2_TRACKER_PORT:${XRES_RM2_TRACKER_PORT:-18031}"
  "rm2-admin-port:XRES_RM2_ADMIN_PORT:${XRES_RM2_ADMIN_PORT:-18033}"
  "rm2-webapp-port:XRES_RM2_WEBAPP_PORT:${XRES_RM2_WEBAPP_PORT:-18088}"
)

# The module flags Hadoop 3.4 needs on JDK 17 (HADOOP-19310's list).
JPMS_OPTS=(
  -XX:+IgnoreUnrecognizedVMOptions
  --add-opens=java.base/java.io=ALL-UNNAMED
  --add-opens=java.base/java.lang=ALL-UNNAMED
  --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.math=ALL-UNNAMED
  --add-opens=java.base/java.net=ALL-UNNAMED
  --add-opens=java.base/java.text=ALL-UNNAMED
  --add-opens=java.base/java.util=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens=java.base/java.util.zip=ALL-UNNAMED
  --add-opens=java.base/sun.security.util=ALL-UNNAMED
  --add-opens=java.base/sun.security.x509=ALL-UNNAMED
  # Kerberos (secure profile): Hadoop and MiniKdc read the JDK's krb5 configuration.
  --add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED
  --add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED
)

RPC_PROTECTION=${XRES_RPC_PROTECTION:-authentication}
SECURE=${XRES_SECURE:-0}
HA=${XRES_MINICLUSTER_HA:-0}

say() { echo "minicluster: $*" >&2; }
die() { echo "minicluster: error: $*" >&2; exit 1; }

log_tail() {
  local n=${1:-40} f
  for f in "$OUT" "$LOG"; do
    if [[ -s $f ]]; then
      echo "----- last $n lines of $f -----" >&2
      tail -n "$n" "$f" >&2
    fi
  done
}

# java_major JAVA -> prints the feature version (17, 25, ...) or nothing.
java_major() {
  "$1" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\)[."].*/\1/p' | head -n1
}

find_java() {
  local tried=() c
  if [[ -n ${JAVA_HOME:-} ]]; then
    c=$JAVA_HOME/bin/java
    [[ -x $c && $(java_major "$c") == 17 ]] && { JAVA=$c; return; }
    tried+=("JAVA_HOME=$JAVA_HOME ($( [[ -x $c ]] && echo "java $(java_major "$c")" || echo "no bin/java"))")
  fi
  local d cands=()
  for d in $JVM_DIRS; do cands+=("$d"/*17*/bin/java); done
  for c in "${cands[@]}" $(command -v java 2>/dev/null || true); do
    [[ -x $c ]] || continue
    if [[ $(java_major "$c") == 17 ]]; then
      JAVA=$c
      return
    fi
    tried+=("$c (java $(java_major "$c"))")
  done
  die "no JDK 17 found (Hadoop $HADOOP_VERSION needs Java 17; newer JDKs break Hadoop 3.4's security code). Tried: ${tried[*]:-nothing}. Install one (Debian: apt-get install openjdk-17-jdk-headless) or set JAVA_HOME to it."
}

# check_version: Hadoop 3.1 and newer; older ones fail here in one line, before Maven.
check_version() {
  [[ $HADOOP_VERSION =~ ^([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || die "XRES_HADOOP_VERSION=$HADOOP_VERSION: want a version such as 3.4.1"
  local major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]}
  if ((major < 3 || (major == 3 && minor < 1))); then
    die "XRES_HADOOP_VERSION=$HADOOP_VERSION is not supported: the launcher needs Hadoop 3.1 or newer (older ones are neither built nor tested; make test-matrix covers 3.1.4 to 3.5.0)"
  fi
}

find_mvn() {
  MVN=$(command -v mvn 2>/dev/null) || die "mvn not found on PATH: Maven is needed once to fetch Hadoop's artifacts and build the launcher (Debian: apt-get install maven)"
}

# stamp: what the cached build was made from.
stamp() {
  (echo "$HADOOP_VERSION"; cat "$HERE/pom.xml"; find "$HERE/src" -type f | LC_ALL=C sort | xargs cat) | sha256sum | cut -d' ' -f1
}

build_is_current() {
  [[ -f $BUILD/.stamp && -f $BUILD/classpath.txt && -d $BUILD/classes ]] || return 1
  [[ $(cat "$BUILD/.stamp") == "$(stamp)" ]] || return 1
  # A cleaned ~/.m2 invalidates the class path too.
  local jar
  while IFS= read -r jar; do [[ -z $jar || -f $jar ]] || return 1; done < <(tr ':' '\n' < "$BUILD/classpath.txt")
}

build() {
  if build_is_current; then
    return
  fi
  find_mvn
  mkdir -p "$BUILD"
  local mlog=$BUILD/mvn.log t0=$SECONDS
  say "building the launcher for Hadoop $HADOOP_VERSION with Maven (the first build downloads ~150 MB into ~/.m2; log: $mlog)"
  if ! JAVA_HOME=${JAVA%/bin/java} timeout "$MVN_TIMEOUT" "$MVN" -B -q -f "$HERE/pom.xml" \
      -Dhadoop.version="$HADOOP_VERSION" -Dxres.hadoop.line="${HADOOP_VERSION%.*}" -Dxres.build.dir="$BUILD" package dependency:build-classpath \
      -Dmdep.outputFile="$BUILD/classpath.txt" > "$mlog" 2>&1; then
    echo "----- last 40 lines of $mlog -----" >&2
    tail -n 40 "$mlog" >&2
    die "Maven build of the launcher failed (Hadoop $HADOOP_VERSION; exit status above, full log $mlog)"
  fi
  stamp > "$BUILD/.stamp"
  say "launcher built in $((SECONDS - t0)) s"
}

# ours PID: is PID a live launcher JVM for this state folder?
ours() {
  local pid=$1
  [[ $pid =~ ^[0-9]+$ ]] && [[ -r /proc/$pid/cmdline ]] || return 1
  local cmdline
  cmdline=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ $cmdline == *" $MAIN "*"--work-dir=$WORK "* ]]
}

# running: sets PID from the pid file if it names our live launcher; cleans a stale file.
running() {
  PID=
  [[ -f $PIDFILE ]] || return 1
  local p
  p=$(cat "$PIDFILE" 2>/dev/null || true)
  if ours "$p"; then
    PID=$p
    return 0
  fi
  if [[ $p =~ ^[0-9]+$ ]] && [[ -e /proc/$p ]]; then
    say "notice: removing stale pid file $PIDFILE (pid $p is alive but is not this minicluster)"
  else
    say "notice: removing stale pid file $PIDFILE (pid ${p:-?} is not running)"
  fi
  rm -f "$PIDFILE"
  return 1
}

ready() { [[ -f $STDOUT ]] && grep -q '^XRES-MINICLUSTER READY' "$STDOUT"; }

port_in_use() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

rss() { sed -n 's/^VmRSS:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null || true; }

print_ready() {
  local conf
  conf=$(sed -n 's/^XRES_HADOOP_CONF_DIR=//p' "$WORK/cluster.env")
  echo "minicluster ready (pid $PID, RSS $(rss "$PID"), Hadoop $(sed -n 's/^XRES_HADOOP_VERSION=//p' "$WORK/cluster.env"))"
  echo "  HADOOP_CONF_DIR=$conf"
  echo "  RM REST:  $(sed -n 's/^XRES_RM_WEBAPP_URL=//p' "$WORK/cluster.env")/ws/v1/cluster"
  echo "  NameNode: $(sed -n 's/^XRES_NAMENODE=//p' "$WORK/cluster.env")"
  if grep -q '^XRES_SECURE=true' "$WORK/cluster.env"; then
    echo "  Kerberos: KRB5_CONFIG=$(sed -n 's/^XRES_KRB5_CONF=//p' "$WORK/cluster.env"), user $(sed -n 's/^XRES_CLIENT_PRINCIPAL=//p' "$WORK/cluster.env") with keytab $(sed -n 's/^XRES_CLIENT_KEYTAB=//p' "$WORK/cluster.env")"
  fi
  echo "  NodeManagers: $(sed -n 's/^XRES_NM[0-9]*_ID=//p' "$WORK/cluster.env" | tr '\n' ' ')"
  if grep -q '^XRES_RM_HA=true' "$WORK/cluster.env"; then
    echo "  HA: $(sed -n 's/^XRES_\(RM[0-9]\)_WEBAPP_URL=/\1 /p' "$WORK/cluster.env" | tr '\n' ' ')(rm1 active at start)"
  fi
  echo "  all addresses: $WORK/cluster.env; logs: $LOG"
}

# check_settings: settings with a fixed set of values fail here, naming the variable.
check_settings() {
  case $RPC_PROTECTION in
    authentication | integrity | privacy) ;;
    *) die "XRES_RPC_PROTECTION=$RPC_PROTECTION: want authentication, integrity or privacy" ;;
  esac
  case $SECURE in
    1 | true) SECURE=true ;;
    0 | false | "") SECURE=false ;;
    *) die "XRES_SECURE=$SECURE: want 1 or 0" ;;
  esac
  [[ ${XRES_MINICLUSTER_OWNER_PID:-0} =~ ^[0-9]+$ ]] || die "XRES_MINICLUSTER_OWNER_PID=$XRES_MINICLUSTER_OWNER_PID: want a process id"
  case $HA in
    1 | true) HA=true; PORTS+=("${RM2_PORTS[@]}") ;;
    0 | false | "") HA=false ;;
    *) die "XRES_MINICLUSTER_HA=$HA: want 1 or 0" ;;
  esac
  [[ ${XRES_MINICLUSTER_LABEL_NODES:-} =~ ^([0-9]+(,[0-9]+)*)?$ ]] || die "XRES_MINICLUSTER_LABEL_NODES=$XRES_MINICLUSTER_LABEL_NODES: want NodeManager indexes such as 1 or 0,2"
  [[ ${XRES_MINICLUSTER_PROXIED_NODES:-} =~ ^([0-9]+(,[0-9]+)*)?$ ]] || die "XRES_MINICLUSTER_PROXIED_NODES=$XRES_MINICLUSTER_PROXIED_NODES: want NodeManager indexes such as 1 or 0,2"
  [[ ${XRES_MINICLUSTER_NM_EXPIRY_MS:-10000} =~ ^[0-9]+$ ]] || die "XRES_MINICLUSTER_NM_EXPIRY_MS=$XRES_MINICLUSTER_NM_EXPIRY_MS: want milliseconds"
  [[ ${XRES_MINICLUSTER_AMRM_ROLL_SECS:-0} =~ ^[0-9]+$ ]] || die "XRES_MINICLUSTER_AMRM_ROLL_SECS=$XRES_MINICLUSTER_AMRM_ROLL_SECS: want seconds"
  [[ ${XRES_MINICLUSTER_AM_EXPIRY_MS:-0} =~ ^[0-9]+$ ]] || die "XRES_MINICLUSTER_AM_EXPIRY_MS=$XRES_MINICLUSTER_AM_EXPIRY_MS: want milliseconds"
  [[ ${XRES_MINICLUSTER_RM_SCHEDULING_WAIT_MS:-10000} =~ ^[0-9]+$ ]] || die "XRES_MINICLUSTER_RM_SCHEDULING_WAIT_MS=$XRES_MINICLUSTER_RM_SCHEDULING_WAIT_MS: want milliseconds"
  [[ ${XRES_MINICLUSTER_DT_MAX_LIFETIME_MS:-0} =~ ^[0-9]+$ ]] || die "XRES_MINICLUSTER_DT_MAX_LIFETIME_MS=$XRES_MINICLUSTER_DT_MAX_LIFETIME_MS: want milliseconds"
  [[ ${XRES_MINICLUSTER_DT_RENEW_INTERVAL_MS:-0} =~ ^[0-9]+$ ]] || die "XRES_MINICLUSTER_DT_RENEW_INTERVAL_MS=$XRES_MINICLUSTER_DT_RENEW_INTERVAL_MS: want milliseconds"
  case ${XRES_MINICLUSTER_GPU_MODE:-counted} in
    counted | plugin | isolated | docker | pluggable) ;;
    *) die "XRES_MINICLUSTER_GPU_MODE=$XRES_MINICLUSTER_GPU_MODE: want counted, plugin, isolated, docker or pluggable" ;;
  esac
  [[ ${XRES_MINICLUSTER_GPU_MINORS:-} =~ ^([0-9]+(,[0-9]+)*)?$ ]] || die "XRES_MINICLUSTER_GPU_MINORS=$XRES_MINICLUSTER_GPU_MINORS: want minor numbers such as 2,0"
  [[ $VERB_TIMEOUT =~ ^[0-9]+$ ]] || die "XRES_MINICLUSTER_VERB_TIMEOUT=$VERB_TIMEOUT: want seconds"
  check_cluster_conf
}

# What an AM must take from the cluster (ClusterConf.java): yarn.http.policy, a standalone web
# proxy, the NodeManagers' AMRMProxy.
check_cluster_conf() {
  HTTP_POLICY=${XRES_MINICLUSTER_HTTP_POLICY:-HTTP_ONLY}
  case $HTTP_POLICY in
    HTTP_ONLY | HTTPS_ONLY) ;;
    *) die "XRES_MINICLUSTER_HTTP_POLICY=$HTTP_POLICY: want HTTP_ONLY or HTTPS_ONLY" ;;
  esac
  case ${XRES_MINICLUSTER_WEB_PROXY:-0} in
    1 | true) WEB_PROXY=true ;;
    0 | false) WEB_PROXY=false ;;
    *) die "XRES_MINICLUSTER_WEB_PROXY=$XRES_MINICLUSTER_WEB_PROXY: want 1 or 0" ;;
  esac
  case ${XRES_MINICLUSTER_AMRMPROXY:-0} in
    1 | true) AMRM_PROXY=true ;;
    0 | false) AMRM_PROXY=false ;;
    *) die "XRES_MINICLUSTER_AMRMPROXY=$XRES_MINICLUSTER_AMRMPROXY: want 1 or 0" ;;
  esac
}

launcher_args() {
  local p name
  ARGS=(--work-dir="$WORK" --conf-dir="$WORK/conf" --rpc-protection="$RPC_PROTECTION" --secure="$SECURE"
    --owner-pid="${XRES_MINICLUSTER_OWNER_PID:-0}"
    --nodemanagers="${XRES_MINICLUSTER_NODEMANAGERS:-2}"
    --gpus="${XRES_MINICLUSTER_GPUS:-2}" --fpgas="${XRES_MINICLUSTER_FPGAS:-1}"
    --ha="$HA" --label-nodes="${XRES_MINICLUSTER_LABEL_NODES:-}" --proxied-nodes="${XRES_MINICLUSTER_PROXIED_NODES:-}"
    --nm-expiry-ms="${XRES_MINICLUSTER_NM_EXPIRY_MS:-10000}" --amrm-roll-secs="${XRES_MINICLUSTER_AMRM_ROLL_SECS:-0}"
    --am-expiry-ms="${XRES_MINICLUSTER_AM_EXPIRY_MS:-0}"
    --rm-scheduling-wait-ms="${XRES_MINICLUSTER_RM_SCHEDULING_WAIT_MS:-10000}"
    --am-max-attempts="${XRES_MINICLUSTER_AM_MAX_ATTEMPTS:-1}"
    --log-aggregation="${XRES_MINICLUSTER_LOG_AGGREGATION:-off}"
    --dt-max-lifetime-ms="${XRES_MINICLUSTER_DT_MAX_LIFETIME_MS:-0}"
    --dt-renew-interval-ms="${XRES_MINICLUSTER_DT_RENEW_INTERVAL_MS:-0}"
    --nm-memory-mb="${XRES_MINICLUSTER_NM_MEMORY_MB:-4096}" --nm-vcores="${XRES_MINICLUSTER_NM_VCORES:-8}"
    --gpu-mode="${XRES_MINICLUSTER_GPU_MODE:-counted}" --gpu-minors="${XRES_MINICLUSTER_GPU_MINORS:-}")
  ARGS+=(--http-policy="$HTTP_POLICY" --web-proxy="$WEB_PROXY" --amrm-proxy="$AMRM_PROXY")
  if [[ ${XRES_MINICLUSTER_GPU_MODE:-counted} != counted ]]; then
    ARGS+=(--fake-nvidia-smi="${XRES_FAKE_NVIDIA_SMI:-$HERE/../../driver/gpu/testdata/fake-nvidia-smi}")
  fi
  for p in "${PORTS[@]}"; do
    name=${p%%:*}
    ARGS+=("--$name=${p##*:}")
  done
}

java_cmd() {
  # The NodeManagers pass JAVA_HOME on to containers (yarn.nodemanager.env-whitelist): Java AMs such as
  # DistributedShell start "$JAVA_HOME/bin/java", so it must name the JDK the cluster runs on.
  export JAVA_HOME=${JAVA%/bin/java}
  # The node's configuration, which the NodeManagers pass on to containers as HADOOP_CONF_DIR
  # (yarn.nodemanager.env-whitelist), as a real node's start scripts and whitelist do: the
  # cluster's client configuration (its yarn-site.xml says whether the NodeManagers run YARN's
  # GPU plugin: a launcher whose NodeManager's REST cannot answer, e.g. SPNEGO on a secure
  # cluster, reads it there), or under the AMRMProxy node-conf/ (the AMRMProxy as scheduler).
  export HADOOP_CONF_DIR=$WORK/conf
  if [[ $AMRM_PROXY == true ]]; then
    export HADOOP_CONF_DIR=$WORK/node-conf
  fi
  # shellcheck disable=SC2206
  local extra=(${XRES_MINICLUSTER_JAVA_OPTS:-})
  # $WORK/jvm-conf comes first on the class path: the launcher writes the yarn-site.xml and
  # capacity-scheduler.xml there that an RM re-reads when it becomes active (refreshAll), as
  # a real RM reads its HADOOP_CONF_DIR. A fresh, empty one at every start.
  rm -rf "$WORK/jvm-conf"
  mkdir -p "$WORK/jvm-conf"
  local cp="$WORK/jvm-conf:$BUILD/classes:$(cat "$BUILD/classpath.txt")"
  if [[ $SECURE == true ]]; then
    # The NodeManagers' localizer runs in this JVM with a Configuration read from the class path, not
    # the cluster's in-memory one; on a real cluster HADOOP_CONF_DIR tells it what the secure DataNode
    # demands. Without this it reads blocks without the SASL handshake ("instead of deadbeef").
    cat >"$WORK/jvm-conf/hdfs-site.xml" <<'XML'
<?xml version="1.0"?>
<configuration>
  <property><name>dfs.data.transfer.protection</name><value>authentication</value></property>
</configuration>
XML
  fi
  CMD=("$JAVA" "${JPMS_OPTS[@]}" -Xms256m -Xmx1g -XX:+UseSerialGC -XX:TieredStopAtLevel=1
    -Djava.net.preferIPv4Stack=true
    -Dlog4j.configuration=log4j-xres.properties -Dxres.log.file="$LOG"
    "${extra[@]}"
    -cp "$cp" "$MAIN" "${ARGS[@]}")
}

stop_pid() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_GRACE * 2; i++)); do
    ours "$pid" || return 0
    sleep 0.5
  done
  say "pid $pid still running ${STOP_GRACE}s after SIGTERM; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 20; i++)); do
    ours "$pid" || return 0
    sleep 0.5
  done
  die "pid $pid survived SIGKILL"
}

cmd_deps() {
  check_version
  find_java
  find_mvn
  say "java: $JAVA ($("$JAVA" -version 2>&1 | head -n1))"
  say "mvn:  $MVN ($("$MVN" -v 2>/dev/null | head -n1 | sed 's/\x1b\[[0-9;]*m//g'))"
  build
  say "launcher for Hadoop $HADOOP_VERSION is built: $BUILD"
  # The NodeManagers bind the machine's hostname; Java must be able to resolve it.
  if ! getent hosts "$(hostname)" > /dev/null 2>&1; then
    say "warning: hostname '$(hostname)' does not resolve; the NodeManagers will fail to start. Fix: echo \"127.0.0.1 $(hostname)\" >> /etc/hosts"
  fi
}

# claim_work: run.sh deletes folders under $WORK, so it only uses a folder it made (marked
# with .xres-minicluster) or an empty one.
claim_work() {
  mkdir -p "$WORK"
  if [[ ! -e $WORK/.xres-minicluster ]]; then
    local entries
    entries=$(shopt -s nullglob dotglob; f=("$WORK"/*); echo "${#f[@]}")
    if ((entries > 0)); then
      die "XRES_MINICLUSTER_DIR=$WORK is not empty and was not made by run.sh; name a new or empty folder"
    fi
    echo "state folder of docker/hadoop-minicluster/run.sh; its contents are deleted on start" > "$WORK/.xres-minicluster"
  fi
}

START_TRIES=0
cmd_start() {
  check_version
  check_settings
  find_java
  build
  claim_work
  if running; then
    if ready; then
      say "already running"
      print_ready
      return 0
    fi
    say "pid $PID is starting; waiting for it"
  else
    local p port name var busy=()
    for p in "${PORTS[@]}"; do
      name=${p%%:*}; var=${p#*:}; var=${var%%:*}; port=${p##*:}
      if port_in_use "$port"; then
        busy+=("port $port ($var, launcher --$name)")
      fi
    done
    if ((${#busy[@]})); then
      die "cannot start: in use: ${busy[*]}. Stop what listens there (ss -ltnp) or choose other ports through the variables named."
    fi
    # A fresh cluster: HDFS is formatted anyway, and MiniYARNCluster makes a new
    # NodeManager folder under target/ at every start (old ones would pile up).
    rm -rf "$WORK/conf" "$WORK/cluster.env" "$STDOUT" "$WORK/target" "$WORK/dfs" "$WORK/tmp" "$WORK/kerberos" \
      "$WORK/nodemanagers" "$WORK/rm-state" "$WORK/node-labels"
    [[ -f $LOG ]] && mv -f "$LOG" "$LOG.1"
    [[ -f $OUT ]] && mv -f "$OUT" "$OUT.1"
    launcher_args
    java_cmd
    # A session of its own, so a Ctrl-C in the shell that started it does not reach it;
    # the working directory holds MiniYARNCluster's ./target folder.
    (cd "$WORK" && exec setsid "${CMD[@]}" < /dev/null > "$STDOUT" 2> "$OUT") &
    PID=$!
    echo "$PID" > "$PIDFILE"
    say "started pid $PID (Hadoop $HADOOP_VERSION); waiting up to ${READY_TIMEOUT}s for readiness"
  fi
  local t0=$SECONDS
  while ! ready; do
    if grep -q '^XRES-MINICLUSTER FAILED' "$STDOUT" 2>/dev/null || ! kill -0 "$PID" 2>/dev/null; then
      log_tail 40
      local why
      why=$(sed -n 's/^XRES-MINICLUSTER FAILED //p' "$STDOUT" 2>/dev/null | head -n1)
      ours "$PID" && stop_pid "$PID"
      rm -f "$PIDFILE"
      # The NodeManagers' ports are picked free just before they bind (they must stay
      # fixed across NodeManager restarts); another process can take one in between
      # (seen once in CI: NMWebapps, BindException). A fresh start picks new ones.
      if [[ $why == *"Address already in use"* ]] && ((START_TRIES < 2)); then
        START_TRIES=$((START_TRIES + 1))
        say "a port picked for the cluster was taken before it bound ($why); starting again ($START_TRIES of 2)"
        cmd_start
        return
      fi
      die "the cluster failed to start: ${why:-the JVM exited (see the log tail above)}"
    fi
    if ((SECONDS - t0 >= READY_TIMEOUT)); then
      log_tail 40
      stop_pid "$PID"
      rm -f "$PIDFILE"
      die "the cluster was not ready within ${READY_TIMEOUT}s (XRES_MINICLUSTER_TIMEOUT); stopped it; logs in $WORK"
    fi
    sleep 0.5
  done
  say "ready after $((SECONDS - t0)) s"
  print_ready
}

# Containers can outlive their NodeManager: each runs in a session of its own, and a
# NodeManager stopped with the JVM (or killed with it) does not always stop them first. A
# stopped cluster leaves none behind: every process with a CONTAINER_ID whose LOG_DIRS lie
# under $WORK is killed. One grep reads every process's environment.
kill_containers() {
  local f pid pids=()
  while IFS= read -r f; do
    pid=${f#/proc/}
    pid=${pid%/environ}
    grep -qzs '^CONTAINER_ID=' "$f" && pids+=("$pid")
  done < <(grep -lzsF "LOG_DIRS=$WORK/" /proc/[0-9]*/environ 2>/dev/null)
  ((${#pids[@]})) || return 0
  kill -KILL "${pids[@]}" 2>/dev/null || true
  say "killed ${#pids[@]} container process(es) the NodeManagers left running"
}

cmd_stop() {
  if running; then
    say "stopping pid $PID"
    stop_pid "$PID"
    rm -f "$PIDFILE"
    say "stopped"
  else
    say "not running"
  fi
  kill_containers
}

cmd_status() {
  if ! running; then
    echo "minicluster: not running"
    return 3
  fi
  if ready; then
    print_ready
    return 0
  fi
  echo "minicluster: pid $PID is running but not ready yet (see: $0 logs)"
  return 1
}

cmd_logs() {
  local n=${1:-100}
  [[ $n =~ ^[0-9]+$ ]] || die "logs: line count must be a number, got '$n'"
  [[ -s $OUT || -s $LOG ]] || { say "no logs in $WORK"; return 0; }
  log_tail "$n" 2>&1
}

cmd_env() {
  [[ -f $WORK/cluster.env ]] || die "no $WORK/cluster.env: the cluster has not been started"
  grep '^XRES_' "$WORK/cluster.env"
}

# verb METHOD PATH [EXTRA_SECONDS]: one call to the running cluster's fault-verb endpoint
# (Admin.java, HTTP on 127.0.0.1, port in cluster.env), waiting VERB_TIMEOUT (plus EXTRA_SECONDS
# for a verb that sleeps that long); prints its answer, exit 1 with it on an error.
verb() {
  local wait=$((VERB_TIMEOUT + ${3:-0})) name=${2%%\?*}
  running || die "$name: the cluster is not running (run.sh start)"
  ready || die "$name: the cluster is not ready yet"
  local url port resp code body
  url=$(sed -n 's/^XRES_MINICLUSTER_ADMIN_URL=//p' "$WORK/cluster.env")
  port=${url##*:}
  [[ $port =~ ^[0-9]+$ ]] || die "$name: no XRES_MINICLUSTER_ADMIN_URL in $WORK/cluster.env (a cluster from an older run.sh?)"
  exec 3<>"/dev/tcp/127.0.0.1/$port" || die "$name: cannot connect to the cluster's verb endpoint $url"
  printf '%s /%s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n' "$1" "$2" >&3
  resp=$(timeout "$wait" cat <&3) || { exec 3<&-; die "$name: no answer within ${wait}s (XRES_MINICLUSTER_VERB_TIMEOUT); see $0 logs"; }
  exec 3<&-
  code=${resp#HTTP/* }
  code=${code%% *}
  body=${resp#*$'\r\n\r\n'}
  if [[ $code != 200 ]]; then
    die "${body#error: }"
  fi
  printf '%s\n' "${body%$'\n'}"
}

node_index() {
  [[ ${2:-} =~ ^[0-9]+$ ]] || die "$1: want a NodeManager index (0-based, see nm-list), got '${2:-}'"
}

cmd_foreground() {
  check_version
  check_settings
  find_java
  build
  claim_work
  rm -rf "$WORK/conf" "$WORK/cluster.env" "$WORK/kerberos" "$WORK/nodemanagers" "$WORK/rm-state" "$WORK/node-labels"
  launcher_args
  java_cmd
  cd "$WORK"
  say "logs: $LOG"
  exec "${CMD[@]}"
}

case ${1:-} in
  deps) cmd_deps ;;
  start)
    for o in "${@:2}"; do
      case $o in
        --secure) SECURE=1 ;;
        --ha) HA=1 ;;
        *) die "start: unknown option '$o' (known: --secure, --ha)" ;;
      esac
    done
    cmd_start
    ;;
  rm-restart)
    down=0
    case ${2:-} in
      "") ;;
      --down) [[ ${3:-} =~ ^[0-9]+$ ]] || die "rm-restart: --down wants seconds, got '${3:-}'"; down=$3 ;;
      *) die "rm-restart: unknown option '$2' (known: --down SECONDS)" ;;
    esac
    verb POST "rm-restart?down=$down" "$down"
    ;;
  rm-stop | rm-start | rm-failover) verb POST "$1" ;;
  nm-kill | nm-start) node_index "$1" "${2:-}"; verb POST "$1?n=$2" ;;
  nm-list) verb GET nm-list ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  logs) cmd_logs "${2:-100}" ;;
  env) cmd_env ;;
  foreground) cmd_foreground ;;
  *)
    sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
