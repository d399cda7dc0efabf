package io.xres.minicluster;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.util.VersionInfo;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.yarn.util.resource.ResourceUtils;

/**
 * xres test cluster: MiniDFSCluster (1 NameNode, 1 DataNode) and YARN ({@link Yarn}: one
 * ResourceManager, or two with --ha, and N NodeManagers on 127.0.0.2.. offering yarn.io/gpu
 * and yarn.io/fpga) in one JVM, with the fault verbs served by {@link Admin}.
 *
 * <p>Options are {@code --name=value}; see {@link #DEFAULTS}. NodeManager folders are under
 * {@code <work-dir>/nodemanagers}.
 *
 * <p>Protocol with run.sh: stdout carries exactly one line, either
 * {@code XRES-MINICLUSTER READY conf=<dir> ...} once every daemon is up and the
 * client configuration is written, or {@code XRES-MINICLUSTER FAILED <reason>} before
 * exiting with status 1. Hadoop's own logging goes to the log file (log4j). SIGTERM, or
 * end of stdin with {@code --stop-on-stdin-eof=true}, or the end of the process
 * {@code --owner-pid} names, stops the cluster.
 */
public final class Main {
  static final String GPU = "yarn.io/gpu";
  static final String FPGA = "yarn.io/fpga";

  /** Option names and defaults. Ports are Hadoop's usual ones. */
  static final Map<String, String> DEFAULTS = new LinkedHashMap<>();

  static {
    DEFAULTS.put("work-dir", ".");
    DEFAULTS.put("conf-dir", "");               // default: <work-dir>/conf
    DEFAULTS.put("nn-port", "8020");
    DEFAULTS.put("nn-http-port", "9870");
    DEFAULTS.put("rm-port", "8032");
    DEFAULTS.put("rm-scheduler-port", "8030");
    DEFAULTS.put("rm-tracker-port", "8031");
    DEFAULTS.put("rm-admin-port", "8033");
    DEFAULTS.put("rm-webapp-port", "8088");
    DEFAULTS.put("nodemanagers", "2");
    DEFAULTS.put("gpus", "2");                  // yarn.io/gpu per NodeManager
    DEFAULTS.put("fpgas", "1");                 // yarn.io/fpga per NodeManager
    DEFAULTS.put("nm-memory-mb", "4096");
    DEFAULTS.put("nm-vcores", "8");
    DEFAULTS.put("stop-on-stdin-eof", "false");
    // Stop when this process ends (0: never): a test that starts a cluster and dies
    // without stopping it (killed, timed out) does not leave it behind.
    DEFAULTS.put("owner-pid", "0");
    // hadoop.rpc.protection: the SASL quality of protection the RPC servers demand.
    DEFAULTS.put("rpc-protection", "authentication");
    // Kerberos (MiniKdc in this JVM) for RPC, SPNEGO for the web apps; see Secure.
    DEFAULTS.put("secure", "false");
    // A second ResourceManager (rm2) for manual failover; both share the state store.
    DEFAULTS.put("ha", "false");
    DEFAULTS.put("rm2-port", "18032");
    DEFAULTS.put("rm2-scheduler-port", "18030");
    DEFAULTS.put("rm2-tracker-port", "18031");
    DEFAULTS.put("rm2-admin-port", "18033");
    DEFAULTS.put("rm2-webapp-port", "18088");
    // yarn.http.policy, a standalone web proxy, the AMRMProxy: see ClusterConf.
    ClusterConf.defaults(DEFAULTS);
    // NodeManager indexes (0-based, comma-separated) that carry the node label "gpu".
    DEFAULTS.put("label-nodes", "");
    // NodeManager indexes whose servers bind on 127.1.0.(N+2) while their node id stays
    // 127.0.0.(N+2):port: AMs reach them only through a proxy a test runs (see Yarn.Node).
    DEFAULTS.put("proxied-nodes", "");
    // yarn.nm.liveness-monitor.expiry-interval-ms: how soon a killed NodeManager is LOST.
    DEFAULTS.put("nm-expiry-ms", "10000");
    // yarn.am.liveness-monitor.expiry-interval-ms: how long an AM may be silent before the RM
    // expires its attempt (0: Hadoop's 600000, or a third of --amrm-roll-secs when that is set).
    DEFAULTS.put("am-expiry-ms", "0");
    // yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms: after a restart, how
    // long the RM waits for NodeManagers to re-register before it allocates (Hadoop's 10000).
    DEFAULTS.put("rm-scheduling-wait-ms", "10000");
    // yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs (0: Hadoop's default).
    DEFAULTS.put("amrm-roll-secs", "0");
    // yarn.resourcemanager.am.max-attempts: the most AM attempts an application may ask for.
    DEFAULTS.put("am-max-attempts", "1");
    // The fault verbs' HTTP endpoint on 127.0.0.1 (0: any free port; see Admin).
    DEFAULTS.put("admin-port", "0");
    // YARN log aggregation: off (yarn.log-aggregation-enable=false), or on with the
    // TFile blocks compressed so (yarn.nodemanager.log-aggregation.compression-type: none, gz);
    // logs go to HDFS /tmp/logs when an application ends.
    DEFAULTS.put("log-aggregation", "off");
    // The NameNode's delegation tokens: dfs.namenode.delegation.token.max-lifetime and
    // .renew-interval in ms (0: Hadoop's 7 days and 1 day). Short ones let a test outlive a token.
    DEFAULTS.put("dt-max-lifetime-ms", "0");
    DEFAULTS.put("dt-renew-interval-ms", "0");
    // How the NodeManagers treat yarn.io/gpu: counted, plugin, isolated or docker (see GpuMode).
    DEFAULTS.put("gpu-mode", "counted");
    // Plugin modes: the minor numbers of GPU index 0, 1, ... on every NodeManager (default:
    // index k has minor 2*((k+1) mod --gpus)).
    DEFAULTS.put("gpu-minors", "");
    // Plugin modes: the fake nvidia-smi (driver/gpu/testdata/fake-nvidia-smi).
    DEFAULTS.put("fake-nvidia-smi", "");
  }

  /** The smallest AMRMToken rolling interval offered: see amRmRolling. */
  static final int MIN_AMRM_ROLL_SECS = 10;

  /** hadoop.rpc.protection values (SASL qop auth, auth-int, auth-conf). */
  static final List<String> PROTECTIONS = List.of("authentication", "integrity", "privacy");

  private Main() {}

  public static void main(String[] args) {
    PrintStream out = System.out;
    Map<String, String> opt;
    try {
      opt = parse(args);
    } catch (IllegalArgumentException e) {
      out.println("XRES-MINICLUSTER FAILED " + e.getMessage());
      out.flush();
      System.exit(2);
      return;
    }
    try {
      run(opt, out);
    } catch (Throwable t) {
      t.printStackTrace();
      out.println("XRES-MINICLUSTER FAILED " + oneLine(t));
      out.flush();
      // Halt: half-started Hadoop services leave non-daemon threads behind.
      Runtime.getRuntime().halt(1);
    }
  }

  static Map<String, String> parse(String[] args) {
    Map<String, String> opt = new LinkedHashMap<>(DEFAULTS);
    for (String a : args) {
      int eq = a.indexOf('=');
      if (!a.startsWith("--") || eq < 0) {
        throw new IllegalArgumentException("bad argument " + a + ": want --name=value");
      }
      String k = a.substring(2, eq);
      if (!DEFAULTS.containsKey(k)) {
        throw new IllegalArgumentException("unknown option --" + k + "; known: " + DEFAULTS.keySet());
      }
      opt.put(k, a.substring(eq + 1));
    }
    for (String k : DEFAULTS.keySet()) {
      if (k.endsWith("port") || k.equals("nodemanagers") || k.equals("gpus") || k.equals("fpgas")
          || k.startsWith("nm-") || k.endsWith("-ms") || k.equals("owner-pid") || k.equals("amrm-roll-secs")) {
        try {
          if (Integer.parseInt(opt.get(k)) < 0) {
            throw new NumberFormatException("negative");
          }
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("option --" + k + "=" + opt.get(k) + ": not a non-negative integer");
        }
      }
    }
    for (String k : List.of("secure", "ha")) {
      if (!List.of("true", "false").contains(opt.get(k))) {
        throw new IllegalArgumentException("option --" + k + "=" + opt.get(k) + ": want true or false");
      }
    }
    int nms = Integer.parseInt(opt.get("nodemanagers"));
    if (nms < 1 || nms > 200) {
      throw new IllegalArgumentException("option --nodemanagers=" + nms + ": want 1 to 200 (hosts 127.0.0.2 up)");
    }
    Yarn.parseIndices("label-nodes", opt.get("label-nodes"), nms);
    Yarn.parseIndices("proxied-nodes", opt.get("proxied-nodes"), nms);
    ClusterConf.validate(opt);
    int roll = Integer.parseInt(opt.get("amrm-roll-secs"));
    if (roll != 0 && roll < MIN_AMRM_ROLL_SECS) {
      throw new IllegalArgumentException("option --amrm-roll-secs=" + roll + ": want 0 (Hadoop's default) or at least "
          + MIN_AMRM_ROLL_SECS + " (the RM demands more than 3 x yarn.am.liveness-monitor.expiry-interval-ms)");
    }
    int amExpiry = Integer.parseInt(opt.get("am-expiry-ms"));
    if (amExpiry != 0 && amExpiry < 2000) {
      throw new IllegalArgumentException("option --am-expiry-ms=" + amExpiry
          + ": want 0 (Hadoop's default) or at least 2000 (an AM heartbeats every second or so; less expires live ones)");
    }
    if (amExpiry != 0 && roll != 0 && amExpiry * 3L >= roll * 1000L) {
      throw new IllegalArgumentException("option --am-expiry-ms=" + amExpiry + " with --amrm-roll-secs=" + roll
          + ": the RM demands a rolling interval over 3 x the AM expiry interval; want --am-expiry-ms below "
          + roll * 1000L / 3);
    }
    if (Integer.parseInt(opt.get("nm-expiry-ms")) < 2000) {
      throw new IllegalArgumentException("option --nm-expiry-ms=" + opt.get("nm-expiry-ms")
          + ": want at least 2000 (NodeManagers heartbeat every 200 ms; less loses live ones)");
    }
    for (String k : List.of("dt-max-lifetime-ms", "dt-renew-interval-ms")) {
      int v = Integer.parseInt(opt.get(k));
      if (v != 0 && v < 10_000) {
        throw new IllegalArgumentException("option --" + k + "=" + v + ": want 0 (Hadoop's default) or at least 10000");
      }
    }
    if (!List.of("off", "none", "gz").contains(opt.get("log-aggregation"))) {
      throw new IllegalArgumentException("option --log-aggregation=" + opt.get("log-aggregation")
          + ": want off, none or gz");
    }
    GpuMode.parse(opt, new File("."));
    if (!PROTECTIONS.contains(opt.get("rpc-protection"))) {
      throw new IllegalArgumentException("option --rpc-protection=" + opt.get("rpc-protection")
          + ": want one of " + PROTECTIONS);
    }
    return opt;
  }

  static void run(Map<String, String> opt, PrintStream out) throws Exception {
    long t0 = System.nanoTime();
    // Jersey and Guice log through java.util.logging to stderr at INFO; keep warnings only.
    java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
    File work = new File(opt.get("work-dir")).getAbsoluteFile();
    File confDir = opt.get("conf-dir").isEmpty() ? new File(work, "conf") : new File(opt.get("conf-dir")).getAbsoluteFile();
    String rmHost = "localhost";
    int nms = num(opt, "nodemanagers");

    // Fail early, naming the option, rather than deep inside a Hadoop service.
    boolean ha = Boolean.parseBoolean(opt.get("ha"));
    for (String k : opt.keySet()) {
      if (k.endsWith("port") && (ha || !k.startsWith("rm2-"))) {
        checkPortFree(k, num(opt, k));
      }
    }

    // The KDC first: nothing may touch UserGroupInformation before it runs.
    Secure secure = Boolean.parseBoolean(opt.get("secure")) ? Secure.start(new File(work, "kerberos")) : null;
    if (secure != null) {
      SECURE.set(secure);
    }

    YarnConfiguration conf = new YarnConfiguration();
    conf.set("hadoop.tmp.dir", new File(work, "tmp").getPath());
    // Simple auth; the RM REST API accepts writes with ?user.name=<user>.
    conf.set("hadoop.security.authentication", "simple");
    conf.set("hadoop.http.filter.initializers", "org.apache.hadoop.security.AuthenticationFilterInitializer");
    conf.set("hadoop.http.authentication.type", "simple");
    conf.setBoolean("hadoop.http.authentication.simple.anonymous.allowed", true);
    if (secure != null) {
      secure.configure(conf);
      secure.login(conf);
    }
    // Applies to every SASL connection: TOKEN (AMRMToken, NMToken) always, KERBEROS when secure.
    conf.set("hadoop.rpc.protection", opt.get("rpc-protection"));

    // HDFS: 1 NameNode, 1 DataNode.
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(work, "dfs").getPath());
    conf.setInt("dfs.replication", 1);
    conf.setInt("dfs.namenode.handler.count", 5);
    conf.setInt("dfs.datanode.handler.count", 3);
    conf.setLong("dfs.namenode.resource.du.reserved", 0);
    // Read by the NameNode's token secret manager when it starts (and by the RM's renewer, which
    // renews a submission's HDFS token until its max date).
    if (num(opt, "dt-max-lifetime-ms") > 0) {
      conf.setLong("dfs.namenode.delegation.token.max-lifetime", num(opt, "dt-max-lifetime-ms"));
    }
    if (num(opt, "dt-renew-interval-ms") > 0) {
      conf.setLong("dfs.namenode.delegation.token.renew-interval", num(opt, "dt-renew-interval-ms"));
    }
    MiniDFSCluster dfs = new MiniDFSCluster.Builder(conf)
        .nameNodePort(num(opt, "nn-port"))
        .nameNodeHttpPort(num(opt, "nn-http-port"))
        .numDataNodes(1)
        .format(true)
        .build();
    dfs.waitActive();
    String defaultFS = "hdfs://localhost:" + dfs.getNameNodePort();
    conf.set("fs.defaultFS", defaultFS);
    try (FileSystem fs = dfs.getFileSystem()) {
      // What real clusters offer: a world-writable /tmp and a /user any client can create a home in.
      fs.mkdirs(new org.apache.hadoop.fs.Path("/tmp"));
      fs.setPermission(new org.apache.hadoop.fs.Path("/tmp"), new FsPermission((short) 01777));
      fs.mkdirs(new org.apache.hadoop.fs.Path("/user"));
      fs.setPermission(new org.apache.hadoop.fs.Path("/user"), new FsPermission((short) 0777));
    }

    // YARN: fixed ports, so the written configuration is exact.
    List<String> rmIds = ha ? List.of("rm1", "rm2") : List.of("");
    if (ha) {
      // Manual failover (no ZooKeeper): the verbs call transitionToActive/Standby.
      conf.setBoolean("yarn.resourcemanager.ha.enabled", true);
      conf.set("yarn.resourcemanager.ha.rm-ids", String.join(",", rmIds));
      conf.set("yarn.resourcemanager.cluster-id", "xres");
      conf.setBoolean("yarn.resourcemanager.ha.automatic-failover.enabled", false);
      conf.setBoolean("yarn.resourcemanager.ha.automatic-failover.embedded", false);
      conf.setInt("yarn.client.failover-sleep-base-ms", 100);
      conf.setInt("yarn.client.failover-sleep-max-ms", 1000);
    }
    for (String id : rmIds) {
      String p = id.equals("rm2") ? "rm2-" : "rm-";
      if (!id.isEmpty()) {
        conf.set(Yarn.key("yarn.resourcemanager.hostname", id), rmHost);
      } else {
        conf.set("yarn.resourcemanager.hostname", rmHost);
      }
      conf.set(Yarn.key("yarn.resourcemanager.address", id), rmHost + ":" + num(opt, p + "port"));
      conf.set(Yarn.key("yarn.resourcemanager.scheduler.address", id), rmHost + ":" + num(opt, p + "scheduler-port"));
      conf.set(Yarn.key("yarn.resourcemanager.resource-tracker.address", id), rmHost + ":" + num(opt, p + "tracker-port"));
      conf.set(Yarn.key("yarn.resourcemanager.admin.address", id), rmHost + ":" + num(opt, p + "admin-port"));
      conf.set(Yarn.key("yarn.resourcemanager.webapp.address", id), rmHost + ":" + num(opt, p + "webapp-port"));
    }
    // Work-preserving recovery from a state store under the work folder (shared by both
    // RMs with HA): an RM restart or failover keeps the running containers.
    conf.setBoolean("yarn.resourcemanager.recovery.enabled", true);
    conf.setBoolean("yarn.resourcemanager.work-preserving-recovery.enabled", true);
    conf.setInt("yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms", num(opt, "rm-scheduling-wait-ms"));
    conf.set("yarn.resourcemanager.store.class",
        "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore");
    conf.set("yarn.resourcemanager.fs.state-store.uri", new File(work, "rm-state").toURI().toString());
    // NodeManagers (and clients given this configuration) retry a missing RM quickly.
    conf.setLong("yarn.resourcemanager.connect.retry-interval.ms", 250);
    conf.setLong("yarn.resourcemanager.connect.max-wait.ms", 900_000);
    conf.setLong("yarn.nm.liveness-monitor.expiry-interval-ms", num(opt, "nm-expiry-ms"));
    amRmRolling(conf, num(opt, "amrm-roll-secs"));
    if (num(opt, "am-expiry-ms") > 0) {
      conf.setLong("yarn.am.liveness-monitor.expiry-interval-ms", num(opt, "am-expiry-ms"));
    }
    // Node labels (centrally assigned, kept in a file-system store) and placement constraints.
    conf.setBoolean("yarn.node-labels.enabled", true);
    conf.set("yarn.node-labels.configuration-type", "centralized");
    conf.set("yarn.node-labels.fs-store.root-dir", new File(work, "node-labels").toURI().toString());
    conf.set("yarn.resourcemanager.placement-constraints.handler", "scheduler");
    conf.setBoolean("yarn.webapp.ui2.enable", false);
    conf.setBoolean("yarn.timeline-service.enabled", false);
    boolean aggregate = !opt.get("log-aggregation").equals("off");
    conf.setBoolean("yarn.log-aggregation-enable", aggregate);
    if (aggregate) {
      conf.set("yarn.nodemanager.remote-app-log-dir", "/tmp/logs");
      conf.set("yarn.nodemanager.log-aggregation.compression-type", opt.get("log-aggregation"));
    }
    conf.setInt("yarn.resourcemanager.am.max-attempts", num(opt, "am-max-attempts"));
    conf.setInt("yarn.resourcemanager.nodemanagers.heartbeat-interval-ms", 200);
    conf.setInt("yarn.resourcemanager.client.thread-count", 5);
    conf.setInt("yarn.resourcemanager.scheduler.client.thread-count", 5);
    conf.setInt("yarn.resourcemanager.resource-tracker.client.thread-count", 5);
    conf.setInt("yarn.scheduler.minimum-allocation-mb", 64);
    conf.setInt("yarn.scheduler.maximum-allocation-mb", num(opt, "nm-memory-mb"));
    conf.setInt("yarn.scheduler.maximum-allocation-vcores", num(opt, "nm-vcores"));
    conf.setInt("yarn.nodemanager.resource.memory-mb", num(opt, "nm-memory-mb"));
    conf.setInt("yarn.nodemanager.resource.cpu-vcores", num(opt, "nm-vcores"));
    conf.setBoolean("yarn.nodemanager.vmem-check-enabled", false);
    conf.setBoolean("yarn.nodemanager.pmem-check-enabled", false);
    conf.setFloat("yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage", 99.9f);
    conf.setLong("yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb", 0);
    // Keep container work dirs (launch_container.sh, container_tokens, logs) for post-mortems.
    conf.setInt("yarn.nodemanager.delete.debug-delay-sec", 3600);
    conf.set("yarn.nodemanager.container-executor.class",
        "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor");

    // Resource types. ResourceUtils is JVM-global static state that does not read the
    // Configuration given to the cluster, so reset it from ours before anything starts;
    // resource-types.xml on the class path says the same for lazy readers.
    conf.set("yarn.resource-types", GPU + "," + FPGA);
    conf.set("yarn.nodemanager.resource-type." + GPU, opt.get("gpus"));
    conf.set("yarn.nodemanager.resource-type." + FPGA, opt.get("fpgas"));
    GpuMode gpu = GpuMode.parse(opt, work);
    if (gpu != null) {
      gpu.configure(conf);
    }
    Map<String, String> cs = capacityScheduler();
    cs.forEach(conf::set);
    ResourceUtils.resetResourceTypes(conf);
    ResourceUtils.resetNodeResources();

    ClusterConf.configure(conf, opt, work, rmIds, nms);
    // What an RM re-reads from its class path when it becomes active (AdminService.refreshAll).
    writeJvmConf(new File(work, "jvm-conf"), conf, cs);
    // Several daemons of one kind in one JVM: metrics sources would clash by name.
    DefaultMetricsSystem.setMiniClusterMode(true);
    List<String> hosts = new ArrayList<>();
    for (int i = 0; i < nms; i++) {
      hosts.add("127.0.0." + (i + 2));
    }
    File nmRoot = new File(work, "nodemanagers");
    Yarn yarn = new Yarn(conf, rmIds, hosts, nmRoot, Yarn.parseIndices("label-nodes", opt.get("label-nodes"), nms),
        Yarn.parseIndices("proxied-nodes", opt.get("proxied-nodes"), nms),
        secure == null && !ClusterConf.https(opt), gpu);
    installShutdownHook(yarn, dfs);
    yarn.start();
    ClusterConf.start(conf);
    Admin admin = new Admin(yarn, num(opt, "admin-port"));
    ADMIN.set(admin);
    Configuration eff = yarn.active().rm.getConfig();

    writeConf(confDir, eff, cs, defaultFS, opt, secure != null, rmIds);
    Map<String, String> env = new LinkedHashMap<>();
    env.put("XRES_HADOOP_CONF_DIR", confDir.getPath());
    env.put("XRES_HADOOP_VERSION", VersionInfo.getVersion());
    env.put("XRES_RM_WEBAPP_URL", "http://" + yarn.rms.get(0).webapp());
    env.put("XRES_RM_ADDRESS", conf.get(Yarn.key("yarn.resourcemanager.address", rmIds.get(0))));
    env.put("XRES_RM_SCHEDULER_ADDRESS", conf.get(Yarn.key("yarn.resourcemanager.scheduler.address", rmIds.get(0))));
    env.put("XRES_RM_HA", Boolean.toString(ha));
    if (ha) {
      env.put("XRES_RM_IDS", String.join(",", rmIds));
      for (Yarn.Rm r : yarn.rms) {
        env.put("XRES_" + r.id.toUpperCase() + "_WEBAPP_URL", "http://" + r.webapp());
      }
    }
    env.put("XRES_MINICLUSTER_ADMIN_URL", admin.url());
    env.put("XRES_NODE_LABEL", Yarn.LABEL);
    env.put("XRES_LABEL_NODES", opt.get("label-nodes"));
    env.put("XRES_NAMENODE", defaultFS);
    env.put("XRES_NAMENODE_HTTP", "http://localhost:" + dfs.getNameNode().getHttpAddress().getPort());
    env.put("XRES_NODEMANAGERS", Integer.toString(nms));
    env.put("XRES_RPC_PROTECTION", eff.get("hadoop.rpc.protection"));
    env.put("XRES_GPU_MODE", opt.get("gpu-mode"));
    if (gpu != null) {
      env.put("XRES_GPU_MINORS", gpu.minorList());
    }
    if (secure != null) {
      env.putAll(secure.env());
    }
    for (Yarn.Node n : yarn.nodes) {
      String got = n.nm.getNMContext().getNodeId().toString();
      if (!got.equals(n.id())) {
        throw new IllegalStateException("NodeManager " + n.index + " registered as " + got + ", want " + n.id());
      }
      env.put("XRES_NM" + n.index + "_ID", n.id());
      env.put("XRES_NM" + n.index + "_HOST", n.host);
      env.put("XRES_NM" + n.index + "_HTTP", n.http());
      env.put("XRES_NM" + n.index + "_BIND", n.bind());
      env.put("XRES_NM" + n.index + "_LOCAL_DIRS", n.localDir().getPath());
      env.put("XRES_NM" + n.index + "_LOG_DIRS", n.logDir().getPath());
    }
    ClusterConf.written(confDir, work, eff, env);
    env.put("XRES_MINICLUSTER_PID", Long.toString(ProcessHandle.current().pid()));
    env.put("XRES_MINICLUSTER_START_SECONDS", String.format("%.1f", (System.nanoTime() - t0) / 1e9));
    StringBuilder sb = new StringBuilder("# written by the xres minicluster launcher\n");
    env.forEach((k, v) -> sb.append(k).append('=').append(v).append('\n'));
    writeAtomically(new File(work, "cluster.env"), sb.toString());

    CountDownLatch stop = new CountDownLatch(1);
    // Stop in the main thread, before the JVM's shutdown begins: Hadoop's services remove
    // their own shutdown hooks while stopping, which fails once shutdown is in progress.
    for (String sig : List.of("TERM", "INT")) {
      sun.misc.Signal.handle(new sun.misc.Signal(sig), s -> stop.countDown());
    }
    if (Boolean.parseBoolean(opt.get("stop-on-stdin-eof"))) {
      Thread t = new Thread(() -> {
        try {
          while (System.in.read() >= 0) {
            // drain until EOF
          }
        } catch (IOException ignored) {
          // treat as EOF
        }
        stop.countDown();
      }, "stdin-eof-watcher");
      t.setDaemon(true);
      t.start();
    }
    long owner = Long.parseLong(opt.get("owner-pid"));
    if (owner > 0) {
      Thread t = new Thread(() -> {
        try {
          while (ProcessHandle.of(owner).map(ProcessHandle::isAlive).orElse(false)) {
            Thread.sleep(1000);
          }
          System.err.println("xres minicluster: owner process " + owner + " is gone; stopping");
        } catch (InterruptedException ignored) {
          return;
        }
        stop.countDown();
      }, "owner-watcher");
      t.setDaemon(true);
      t.start();
    }
    out.println("XRES-MINICLUSTER READY conf=" + confDir.getPath()
        + " rm=" + env.get("XRES_RM_WEBAPP_URL") + " nn=" + defaultFS
        + " hadoop=" + VersionInfo.getVersion() + " rpc-protection=" + opt.get("rpc-protection") + " secure=" + (secure != null)
        + " ha=" + ha + " gpu-mode=" + opt.get("gpu-mode") + " nodemanagers=" + nms + " admin=" + admin.url() + " seconds=" + env.get("XRES_MINICLUSTER_START_SECONDS"));
    out.flush();
    stop.await();
    stopAll(yarn, dfs);
    out.println("XRES-MINICLUSTER STOPPED");
    out.flush();
    System.exit(0);
  }

  /** CapacityScheduler keys, set in code: some artifacts strip capacity-scheduler.xml. */
  static Map<String, String> capacityScheduler() {
    Map<String, String> cs = new LinkedHashMap<>();
    cs.put("yarn.resourcemanager.scheduler.class",
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler");
    // Without DominantResourceCalculator the scheduler ignores everything but memory.
    cs.put("yarn.scheduler.capacity.resource-calculator",
        "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator");
    cs.put("yarn.scheduler.capacity.root.queues", "default");
    cs.put("yarn.scheduler.capacity.root.default.capacity", "100");
    cs.put("yarn.scheduler.capacity.root.default.maximum-capacity", "100");
    cs.put("yarn.scheduler.capacity.root.default.user-limit-factor", "1");
    cs.put("yarn.scheduler.capacity.root.default.state", "RUNNING");
    cs.put("yarn.scheduler.capacity.root.default.acl_submit_applications", "*");
    cs.put("yarn.scheduler.capacity.root.default.acl_administer_queue", "*");
    cs.put("yarn.scheduler.capacity.maximum-am-resource-percent", "0.5");
    cs.put("yarn.scheduler.capacity.node-locality-delay", "-1");
    // The default queue may use the nodes labelled gpu (all of their capacity).
    cs.put("yarn.scheduler.capacity.root.accessible-node-labels", "*");
    cs.put("yarn.scheduler.capacity.root.accessible-node-labels." + Yarn.LABEL + ".capacity", "100");
    cs.put("yarn.scheduler.capacity.root.default.accessible-node-labels", Yarn.LABEL);
    cs.put("yarn.scheduler.capacity.root.default.accessible-node-labels." + Yarn.LABEL + ".capacity", "100");
    cs.put("yarn.scheduler.capacity.root.default.accessible-node-labels." + Yarn.LABEL + ".maximum-capacity", "100");
    return cs;
  }

  /** Writes a client configuration any Hadoop client can use as HADOOP_CONF_DIR. */
  static void writeConf(File dir, Configuration eff, Map<String, String> cs, String defaultFS,
      Map<String, String> opt, boolean secure, List<String> rmIds) throws IOException {
    Files.createDirectories(dir.toPath());
    Map<String, String> core = new LinkedHashMap<>();
    core.put("fs.defaultFS", defaultFS);
    for (String k : List.of("hadoop.security.authentication", "hadoop.http.filter.initializers",
        "hadoop.http.authentication.type", "hadoop.http.authentication.simple.anonymous.allowed",
        "hadoop.rpc.protection")) {
      core.put(k, eff.get(k));
    }
    if (secure) {
      core.put("hadoop.security.auth_to_local", eff.get("hadoop.security.auth_to_local"));
    }
    Map<String, String> hdfs = new LinkedHashMap<>();
    hdfs.put("dfs.replication", "1");
    if (secure) {
      // What HDFS clients need to find the servers' principals.
      for (String k : List.of("dfs.namenode.kerberos.principal", "dfs.datanode.kerberos.principal",
          "dfs.block.access.token.enable", "dfs.data.transfer.protection")) {
        hdfs.put(k, eff.get(k));
      }
    }
    hdfs.put("dfs.namenode.rpc-address", "localhost:" + opt.get("nn-port"));
    hdfs.put("dfs.namenode.http-address", "localhost:" + opt.get("nn-http-port"));
    Map<String, String> yarn = new LinkedHashMap<>();
    List<String> keys = new ArrayList<>();
    // The RMs' addresses: one set, or (HA) one per rm-id and no unsuffixed ones, as on a real HA cluster.
    if (rmIds.size() > 1) {
      keys.addAll(List.of("yarn.resourcemanager.ha.enabled", "yarn.resourcemanager.ha.rm-ids",
          "yarn.resourcemanager.cluster-id", "yarn.resourcemanager.ha.automatic-failover.enabled"));
    }
    for (String id : rmIds) {
      for (String k : List.of("yarn.resourcemanager.hostname", "yarn.resourcemanager.address",
          "yarn.resourcemanager.scheduler.address", "yarn.resourcemanager.resource-tracker.address",
          "yarn.resourcemanager.admin.address", "yarn.resourcemanager.webapp.address")) {
        keys.add(Yarn.key(k, id));
      }
    }
    keys.addAll(List.of("yarn.resourcemanager.connect.retry-interval.ms", "yarn.resourcemanager.connect.max-wait.ms",
        "yarn.node-labels.enabled", "yarn.resourcemanager.placement-constraints.handler",
        "yarn.resourcemanager.recovery.enabled", "yarn.resourcemanager.work-preserving-recovery.enabled",
        "yarn.resourcemanager.scheduler.class", "yarn.resourcemanager.am.max-attempts",
        "yarn.scheduler.minimum-allocation-mb", "yarn.scheduler.maximum-allocation-mb",
        "yarn.scheduler.minimum-allocation-vcores", "yarn.scheduler.maximum-allocation-vcores",
        "yarn.nodemanager.resource-type." + GPU, "yarn.nodemanager.resource-type." + FPGA,
        "yarn.nodemanager.delete.debug-delay-sec", "yarn.log-aggregation-enable",
        "yarn.nodemanager.remote-app-log-dir", "yarn.nodemanager.log-aggregation.compression-type",
        "yarn.timeline-service.enabled", "yarn.http.policy",
        // GPU plugin modes: what a NodeManager host's yarn-site.xml says (a launcher reads it when the
        // NodeManager's REST cannot answer)
        "yarn.nodemanager.resource-plugins", "yarn.nodemanager.pluggable-device-framework.enabled",
        // secure profile only (absent otherwise): the principals clients check the servers against
        "yarn.resourcemanager.principal", "yarn.nodemanager.principal",
        "yarn.resourcemanager.webapp.spnego-principal"));
    keys.addAll(ClusterConf.clientKeys(rmIds));
    for (String k : keys) {
      String v = eff.get(k); // get() expands ${...}
      if (v != null) {
        yarn.put(k, v);
      }
    }
    Map<String, String> types = new LinkedHashMap<>();
    types.put("yarn.resource-types", eff.get("yarn.resource-types", GPU + "," + FPGA));
    writeXml(new File(dir, "core-site.xml"), core);
    writeXml(new File(dir, "hdfs-site.xml"), hdfs);
    writeXml(new File(dir, "yarn-site.xml"), yarn);
    writeXml(new File(dir, "resource-types.xml"), types);
    writeXml(new File(dir, "capacity-scheduler.xml"), cs);
  }

  /**
   * Writes yarn-site.xml (every key this launcher set) and capacity-scheduler.xml into dir,
   * which run.sh puts first on the class path: a ResourceManager turning active reloads its
   * queues and settings from there, not from the Configuration it was started with.
   */
  static void writeJvmConf(File dir, Configuration conf, Map<String, String> cs) throws IOException {
    Files.createDirectories(dir.toPath());
    Map<String, String> site = new java.util.TreeMap<>();
    for (Map.Entry<String, String> e : conf) {
      String[] src = conf.getPropertySources(e.getKey());
      if (src != null && List.of(src).contains("programmatically")) {
        site.put(e.getKey(), e.getValue());
      }
    }
    writeXml(new File(dir, "yarn-site.xml"), site);
    writeXml(new File(dir, "capacity-scheduler.xml"), cs);
  }

  static void writeXml(File f, Map<String, String> kv) throws IOException {
    Configuration c = new Configuration(false);
    kv.forEach((k, v) -> c.set(k, v, "xres-minicluster"));
    File tmp = new File(f.getPath() + ".tmp");
    try (OutputStream os = new FileOutputStream(tmp)) {
      c.writeXml(os);
    }
    Files.move(tmp.toPath(), f.toPath(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  static void writeAtomically(File f, String text) throws IOException {
    Path tmp = Path.of(f.getPath() + ".tmp");
    Files.writeString(tmp, text, StandardCharsets.UTF_8);
    Files.move(tmp, f.toPath(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  /**
   * Stops YARN, then HDFS, giving each a bounded time (YARN's stop has been seen over 30 s).
   * Runs once: from the main thread on SIGTERM/SIGINT/stdin EOF, or from the JVM's shutdown
   * hook on any other exit.
   */
  static void stopAll(Yarn yarn, MiniDFSCluster dfs) {
    if (!STOPPED.compareAndSet(false, true)) {
      return;
    }
    Admin admin = ADMIN.get();
    if (admin != null) {
      admin.stop();
    }
    List<Thread> steps = new ArrayList<>();
    steps.add(new Thread(yarn::stop, "stop-yarn"));
    steps.add(new Thread(() -> dfs.shutdown(true), "stop-hdfs"));
    Secure secure = SECURE.get();
    if (secure != null) {
      steps.add(new Thread(secure::stop, "stop-kdc"));
    }
    for (Thread s : steps) {
      s.setDaemon(true);
      s.start();
      try {
        s.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** The secure profile's KDC, stopped last. */
  static final java.util.concurrent.atomic.AtomicReference<Secure> SECURE = new java.util.concurrent.atomic.AtomicReference<>();

  /** The fault verbs' endpoint, stopped first. */
  static final java.util.concurrent.atomic.AtomicReference<Admin> ADMIN = new java.util.concurrent.atomic.AtomicReference<>();

  static final java.util.concurrent.atomic.AtomicBoolean STOPPED = new java.util.concurrent.atomic.AtomicBoolean();

  static void installShutdownHook(Yarn yarn, MiniDFSCluster dfs) {
    Runtime.getRuntime().addShutdownHook(new Thread(() -> stopAll(yarn, dfs), "xres-minicluster-stop"));
  }

  static java.lang.reflect.Field field(Class<?> c, String name) throws NoSuchFieldException {
    java.lang.reflect.Field f = c.getDeclaredField(name);
    f.setAccessible(true);
    return f;
  }

  static void checkPortFree(String option, int port) {
    if (port == 0) {
      return;
    }
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(port));
    } catch (IOException e) {
      throw new IllegalStateException("port " + port + " (--" + option + ") is in use: " + e.getMessage());
    }
  }

  /**
   * The AMRMToken master key rolls every secs seconds. The RM demands an interval over
   * 3 x yarn.am.liveness-monitor.expiry-interval-ms (its activation delay is 1.5 x that, and
   * the interval must exceed twice the delay), so that expiry drops with it: an AM silent
   * for a third of the interval is then expired.
   */
  static void amRmRolling(Configuration conf, int secs) {
    if (secs == 0) {
      return;
    }
    conf.setLong("yarn.resourcemanager.am-rm-tokens.master-key-rolling-interval-secs", secs);
    conf.setLong("yarn.am.liveness-monitor.expiry-interval-ms", secs * 1000L / 3 - 500);
  }

  static int num(Map<String, String> opt, String k) {
    return Integer.parseInt(opt.get(k));
  }

  static String oneLine(Throwable t) {
    Throwable root = t;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    String msg = t.toString();
    if (root != t) {
      msg += " (cause: " + root + ")";
    }
    return msg.replace('\n', ' ');
  }
}
