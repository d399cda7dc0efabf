package io.xres.minicluster;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.inject.servlet.GuiceFilter;
import org.apache.hadoop.ha.HAServiceProtocol;
import org.apache.hadoop.ha.HAServiceProtocol.RequestSource;
import org.apache.hadoop.ha.HAServiceProtocol.StateChangeRequestInfo;
import org.apache.hadoop.service.Service;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;
import org.apache.hadoop.yarn.server.nodemanager.webapp.WebServer;
import org.apache.hadoop.yarn.server.resourcemanager.RMContext;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.QueueMetrics;
import org.apache.hadoop.yarn.webapp.WebApp;
import org.eclipse.jetty.servlet.FilterHolder;

/**
 * The YARN half of the test cluster, started by hand rather than through MiniYARNCluster so
 * that it has what a real cluster has: every NodeManager on its own loopback address
 * (127.0.0.2, 127.0.0.3, ...: node ids {@code 127.0.0.N:port}, N distinct hosts to YARN), a
 * ResourceManager that recovers work-preserving from a file-system state store under the
 * work folder, optionally a second ResourceManager for manual HA failover, node labels, and
 * the fault verbs (restart or fail over the RM, kill or start a NodeManager) that {@link Admin}
 * serves. Each verb returns once its effect shows in the active RM's REST API.
 */
final class Yarn {
  /** Bounds every verb's wait for the REST API to show its effect. */
  static final long VERB_TIMEOUT_MS = 180_000;

  /** Node label the launcher defines (and puts on the --label-nodes). */
  static final String LABEL = "gpu";

  /** One ResourceManager slot: its HA id ("" without HA) and its configuration. */
  static final class Rm {
    final String id;
    final YarnConfiguration conf;
    ResourceManager rm;

    Rm(String id, YarnConfiguration conf) {
      this.id = id;
      this.conf = conf;
    }

    String webapp() {
      return conf.get(key("yarn.resourcemanager.webapp.address", id));
    }
  }

  /**
   * One NodeManager slot: a fixed host and fixed ports, so a restarted one keeps its node id.
   * A proxied one binds its servers on bindHost (127.1.0.N) while its node id stays
   * host:port, so AMs reach its container manager only through a proxy a test listens with on
   * host:port (forwarding to bindHost:port); its web and localizer addresses are bindHost's.
   */
  static final class Node {
    final int index;
    final String host;
    final String bindHost;
    final File dir;
    final int port;
    final int localizerPort;
    final int webPort;
    NodeManager nm;
    /**
     * A NodeManager nm-kill stopped whose own stop (it closes the LevelDB recovery store)
     * waits until nm-start or the cluster's stop: its container threads still record the
     * killed processes' exits in that store, and a write to a closed LevelDB crashes the JVM.
     */
    NodeManager killed;

    Node(int index, String host, String bindHost, File dir, int port, int localizerPort, int webPort) {
      this.index = index;
      this.host = host;
      this.bindHost = bindHost;
      this.dir = dir;
      this.port = port;
      this.localizerPort = localizerPort;
      this.webPort = webPort;
    }

    String id() {
      return host + ":" + port;
    }

    String http() {
      return bindHost + ":" + webPort;
    }

    /** Where the container manager listens: the node id's address unless proxied. */
    String bind() {
      return bindHost + ":" + port;
    }

    File localDir() {
      return new File(dir, "local");
    }

    File logDir() {
      return new File(dir, "logs");
    }
  }

  final YarnConfiguration base;
  final List<Rm> rms = new ArrayList<>();
  final List<Node> nodes = new ArrayList<>();
  final Set<Integer> labelNodes;
  /** Read node and HA states from the RM REST API (false in the secure profile: SPNEGO). */
  private final boolean rest;
  private final ObjectMapper json = new ObjectMapper();
  /** The GPU plugin modes' per-NodeManager setup (null: counted GPUs). */
  private final GpuMode gpu;

  /**
   * @param base the cluster's configuration (RM addresses, scheduler, resources); with HA it
   *     holds the per-id addresses and rmIds lists the ids
   * @param nodeHosts one loopback address per NodeManager
   */
  Yarn(YarnConfiguration base, List<String> rmIds, List<String> nodeHosts, File nmRoot, Set<Integer> labelNodes,
      Set<Integer> proxiedNodes, boolean rest, GpuMode gpu) throws IOException {
    this.base = base;
    this.gpu = gpu;
    this.labelNodes = labelNodes;
    this.rest = rest;
    for (String id : rmIds) {
      YarnConfiguration c = new YarnConfiguration(base);
      if (!id.isEmpty()) {
        c.set("yarn.resourcemanager.ha.id", id);
      }
      rms.add(new Rm(id, c));
    }
    for (int i = 0; i < nodeHosts.size(); i++) {
      String h = nodeHosts.get(i);
      checkLoopback(h);
      String bind = proxiedNodes.contains(i) ? h.replaceFirst("^127\\.0\\.0\\.", "127.1.0.") : h;
      // A proxied node's port must be free on both addresses: the proxy takes the node id's.
      int port = freePort(bind);
      while (!bind.equals(h) && !portFree(h, port)) {
        port = freePort(bind);
      }
      nodes.add(new Node(i, h, bind, new File(nmRoot, "nm" + i), port, freePort(bind), freePort(bind)));
    }
  }

  /** {@code key} for one RM: with HA, its {@code key.<id>} form. */
  static String key(String key, String id) {
    return id.isEmpty() ? key : key + "." + id;
  }

  boolean ha() {
    return rms.size() > 1;
  }

  /** Starts the RMs (the first becomes active) and the NodeManagers; waits for registration. */
  void start() throws Exception {
    for (Rm r : rms) {
      startRm(r);
    }
    if (ha()) {
      rms.get(0).rm.getRMContext().getRMAdminService().transitionToActive(userRequest());
    }
    active().rm.getRMContext().getNodeLabelManager().addToCluserNodeLabelsWithDefaultExclusivity(Set.of(LABEL));
    for (Node n : nodes) {
      startNode(n);
    }
    waitFor("all NodeManagers RUNNING", () -> allNodesRunning());
    waitFor("the scheduler's maximum allocation to come from its NodeManagers", () -> nodeMaximumInForce());
    if (!labelNodes.isEmpty()) {
      Map<NodeId, Set<String>> labels = new LinkedHashMap<>();
      for (int i : labelNodes) {
        labels.put(NodeId.newInstance(nodes.get(i).host, 0), Set.of(LABEL));
      }
      active().rm.getRMContext().getNodeLabelManager().replaceLabelsOnNode(labels);
      waitFor("node label " + LABEL + " on nodes " + labelNodes, () -> labelsShown());
    }
  }

  /**
   * Whether the scheduler caps a container at its largest NodeManager: for the first
   * yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms after the RM started it
   * grants up to the configured maximum allocation instead, which has no limit on GPUs, so a
   * client's profile check would let a worker of 3 GPUs through (it did on Hadoop 3.1 and 3.2,
   * whose clusters start within that window of the first request). The cluster is ready once
   * the limits a client sees are the cluster's.
   */
  private boolean nodeMaximumInForce() {
    long wait = active().rm.getConfig().getLong(YarnConfiguration.RM_WORK_PRESERVING_RECOVERY_SCHEDULING_WAIT_MS,
        YarnConfiguration.DEFAULT_RM_WORK_PRESERVING_RECOVERY_SCHEDULING_WAIT_MS);
    return System.currentTimeMillis() - ResourceManager.getClusterTimeStamp() > wait;
  }

  private void startRm(Rm r) {
    Compat.destroyClusterMetrics();
    QueueMetrics.clearQueueMetrics();
    ResourceManager rm = new ResourceManager() {
      @Override
      protected void doSecureLogin() {
        // the JVM is logged in already (Secure.login)
      }
    };
    rm.init(new YarnConfiguration(r.conf));
    rm.start();
    r.rm = rm;
    isolate(webApp(ResourceManager.class, "webApp", rm));
  }

  private void startNode(Node n) throws IOException {
    YarnConfiguration c = new YarnConfiguration(base);
    c.set("yarn.nodemanager.hostname", n.host);
    c.set("yarn.nodemanager.bind-host", n.bindHost);
    c.set("yarn.nodemanager.address", n.host + ":" + n.port);
    c.set("yarn.nodemanager.localizer.address", n.bindHost + ":" + n.localizerPort);
    c.set("yarn.nodemanager.webapp.address", n.bindHost + ":" + n.webPort);
    c.set("yarn.nodemanager.local-dirs", n.localDir().getPath());
    c.set("yarn.nodemanager.log-dirs", n.logDir().getPath());
    // Recovery, supervised: a stopped NodeManager neither unregisters nor kills its
    // containers, as when its process dies (nm-kill).
    c.setBoolean("yarn.nodemanager.recovery.enabled", true);
    c.setBoolean("yarn.nodemanager.recovery.supervised", true);
    c.set("yarn.nodemanager.recovery.dir", new File(n.dir, "recovery").getPath());
    ClusterConf.node(c, n);
    if (gpu != null) {
      gpu.configureNode(c, n.index);
    }
    NodeManager nm = new NodeManager() {
      @Override
      protected void doSecureLogin() {
        // the JVM is logged in already (Secure.login)
      }
    };
    nm.init(c);
    nm.start();
    n.nm = nm;
    for (Service s : nm.getServices()) {
      if (s instanceof WebServer) {
        isolate(webApp(WebServer.class, "webApp", s));
      }
    }
  }

  /** The active RM: the only one without HA. */
  Rm active() {
    for (Rm r : rms) {
      if (r.rm != null && r.rm.getRMContext().getHAServiceState() == HAServiceProtocol.HAServiceState.ACTIVE) {
        return r;
      }
    }
    throw new IllegalStateException("no active ResourceManager");
  }

  /**
   * The RM rm-stop stopped, until rm-start starts it again (null while none is down); with HA
   * the other RM stays standby meanwhile, so the cluster has no active RM, as when the active
   * one's host is down and failover is manual.
   */
  private Rm down;
  private long downSince;

  /** rm-stop: stops the active RM and leaves it down (its state store stays for rm-start). */
  synchronized String rmStop() {
    if (down != null) {
      throw new IllegalStateException("ResourceManager " + name(down) + " is already stopped; rm-start starts it");
    }
    Rm r = active();
    ResourceManager old = r.rm;
    r.rm = null;
    old.stop();
    down = r;
    downSince = System.nanoTime();
    return "stopped ResourceManager " + name(r) + "; the cluster has no active RM until rm-start";
  }

  /**
   * rm-start: starts the RM rm-stop stopped, fresh, on the same state store (work-preserving
   * recovery: running containers are kept, NodeManagers re-register, AMs must resync).
   */
  synchronized String rmStart() throws Exception {
    if (down == null) {
      throw new IllegalStateException("no ResourceManager is stopped (rm-stop stops the active one)");
    }
    Rm r = down;
    startRm(r);
    if (ha()) {
      r.rm.getRMContext().getRMAdminService().transitionToActive(userRequest());
    }
    down = null;
    long downMs = (System.nanoTime() - downSince) / 1_000_000;
    waitFor("RM " + name(r) + " ACTIVE with every live NodeManager re-registered RUNNING",
        () -> haState(r).equals("ACTIVE") && allNodesRunning());
    return String.format("started ResourceManager %s after %.1f s down; %s", name(r), downMs / 1000.0, nodesLine());
  }

  /** rm-restart: rm-stop, downMs of downtime, rm-start. */
  synchronized String rmRestart(long downMs) throws Exception {
    rmStop();
    Thread.sleep(downMs);
    return rmStart().replaceFirst("^started", "restarted");
  }

  /** Refuses a verb that needs an active RM while rm-stop has one down. */
  private void requireRm() {
    if (down != null) {
      throw new IllegalStateException("needs an active ResourceManager: " + name(down) + " is stopped (rm-start first)");
    }
  }

  /** rm-failover: the active RM goes standby, the other one active. */
  synchronized String rmFailover() throws Exception {
    if (!ha()) {
      throw new IllegalStateException("rm-failover needs the HA profile (XRES_MINICLUSTER_HA=1)");
    }
    requireRm();
    Rm from = active();
    Rm to = rms.get((rms.indexOf(from) + 1) % rms.size());
    from.rm.getRMContext().getRMAdminService().transitionToStandby(userRequest());
    to.rm.getRMContext().getRMAdminService().transitionToActive(userRequest());
    waitFor("RM " + to.id + " ACTIVE, " + from.id + " STANDBY, every live NodeManager RUNNING",
        () -> haState(to).equals("ACTIVE") && haState(from).equals("STANDBY") && allNodesRunning());
    return "failed over from " + from.id + " to " + to.id + " (now active, web " + to.webapp() + "); " + nodesLine();
  }

  /**
   * nm-kill: NodeManager n dies with its containers, as when its host is lost: it stops
   * without telling the RM, its container processes are killed, and the RM marks it LOST once
   * yarn.nm.liveness-monitor.expiry-interval-ms passes.
   */
  synchronized String nmKill(int i) throws Exception {
    requireRm();
    Node n = node(i);
    if (n.nm == null) {
      throw new IllegalStateException("NodeManager " + i + " (" + n.id() + ") is not running");
    }
    NodeManager nm = n.nm;
    n.nm = null;
    // Its services stop (no heartbeat, RPC or web server) but not the NodeManager itself,
    // which would close the recovery store under the container threads (see Node.killed).
    List<Service> services = new ArrayList<>(nm.getServices());
    Collections.reverse(services);
    for (Service s : services) {
      s.stop();
    }
    n.killed = nm;
    int killed = killContainers(n);
    waitFor("node " + n.id() + " LOST", () -> nodeState(n).equals("LOST"));
    return "killed NodeManager " + i + " (" + n.id() + ") and " + killed + " container process(es); RM: LOST";
  }

  /** nm-start: starts NodeManager n again (same host and ports, so the same node id). */
  synchronized String nmStart(int i) throws Exception {
    requireRm();
    Node n = node(i);
    if (n.nm != null) {
      throw new IllegalStateException("NodeManager " + i + " (" + n.id() + ") is already running");
    }
    closeKilled(n);
    startNode(n);
    waitFor("node " + n.id() + " RUNNING", () -> nodeState(n).equals("RUNNING"));
    return "started NodeManager " + i + " (" + n.id() + "); RM: RUNNING";
  }

  /** nm-list: one line per NodeManager: index, node id, RM state, http address, labels, process. */
  synchronized String nmList() throws IOException {
    // While rm-stop has the RM down, the RM's states are unknown: "-".
    Map<String, NodeView> byId = down == null ? nodeViews() : Map.of();
    StringBuilder sb = new StringBuilder();
    for (Node n : nodes) {
      NodeView v = byId.get(n.id());
      String state = v == null ? "-" : v.state();
      List<String> labels = v == null ? List.of() : v.labels();
      sb.append(n.index).append(' ').append(n.id()).append(' ').append(state).append(' ').append(n.http())
          .append(" labels=").append(String.join(",", labels))
          .append(" process=").append(n.nm == null ? "stopped" : "running").append('\n');
    }
    return sb.toString();
  }

  void stop() {
    for (Node n : nodes) {
      if (n.nm != null) {
        n.nm.stop();
      }
      closeKilled(n);
    }
    for (Rm r : rms) {
      if (r.rm != null) {
        r.rm.stop();
      }
    }
  }

  /** Stops the NodeManager nm-kill left half stopped, releasing its recovery store. */
  private static void closeKilled(Node n) {
    if (n.killed != null) {
      n.killed.stop();
      n.killed = null;
    }
  }

  private Node node(int i) {
    if (i < 0 || i >= nodes.size()) {
      throw new IllegalArgumentException("no NodeManager " + i + ": the cluster has 0.." + (nodes.size() - 1));
    }
    return nodes.get(i);
  }

  /** Kills the container processes of node n (those under its local dirs), whole trees. */
  static int killContainers(Node n) {
    String dir = n.localDir().getAbsolutePath() + File.separator;
    int killed = 0;
    for (ProcessHandle p : (Iterable<ProcessHandle>) ProcessHandle.current().children()::iterator) {
      String cmd = p.info().commandLine().orElse("");
      if (!cmd.contains(dir)) {
        continue;
      }
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      killed++;
    }
    return killed;
  }

  private static String name(Rm r) {
    return r.id.isEmpty() ? r.webapp() : r.id;
  }

  private static StateChangeRequestInfo userRequest() {
    return new StateChangeRequestInfo(RequestSource.REQUEST_BY_USER);
  }

  // ---- what the REST API shows ----

  /** A condition read from the RM REST API. */
  interface Check {
    boolean ok() throws IOException;
  }

  /** Polls check until true, at most VERB_TIMEOUT_MS; the error names what was awaited and the last state. */
  void waitFor(String what, Check check) throws Exception {
    long deadline = System.currentTimeMillis() + VERB_TIMEOUT_MS;
    String last = "";
    while (true) {
      try {
        if (check.ok()) {
          return;
        }
        last = nodesLine();
      } catch (IOException e) {
        last = e.toString();
      }
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("timed out after " + VERB_TIMEOUT_MS / 1000 + " s waiting for " + what
            + " in the RM REST API; last seen: " + last);
      }
      Thread.sleep(250);
    }
  }

  JsonNode get(String webapp, String path) throws IOException {
    URL u = new URL("http://" + webapp + path);
    HttpURLConnection c = (HttpURLConnection) u.openConnection();
    c.setConnectTimeout(5000);
    c.setReadTimeout(10000);
    c.setInstanceFollowRedirects(false);
    c.setRequestProperty("Accept", "application/json");
    try {
      int code = c.getResponseCode();
      if (code != 200) {
        throw new IOException("GET " + u + ": HTTP " + code);
      }
      try (InputStream in = c.getInputStream()) {
        return json.readTree(new String(in.readAllBytes(), StandardCharsets.UTF_8));
      }
    } finally {
      c.disconnect();
    }
  }

  /** One node as the active RM reports it. */
  record NodeView(String state, List<String> labels) {}

  String haState(Rm r) throws IOException {
    if (!rest) {
      return r.rm == null ? "" : r.rm.getRMContext().getHAServiceState().name();
    }
    return get(r.webapp(), "/ws/v1/cluster/info").path("clusterInfo").path("haState").asText();
  }

  /**
   * Every node the active RM knows, by node id, in all states: from its REST API, or in the
   * secure profile (whose REST API wants SPNEGO) from the RM's own node tables.
   */
  Map<String, NodeView> nodeViews() throws IOException {
    Map<String, NodeView> out = new LinkedHashMap<>();
    if (!rest) {
      RMContext ctx = active().rm.getRMContext();
      Map<NodeId, Set<String>> labels = ctx.getNodeLabelManager().getNodeLabels();
      List<RMNode> all = new ArrayList<>(ctx.getInactiveRMNodes().values());
      all.addAll(ctx.getRMNodes().values());
      for (RMNode n : all) {
        Set<String> l = labels.getOrDefault(NodeId.newInstance(n.getNodeID().getHost(), 0), Set.of());
        out.put(n.getNodeID().toString(), new NodeView(n.getState().name(), new ArrayList<>(l)));
      }
      return out;
    }
    JsonNode list = get(active().webapp(),
        "/ws/v1/cluster/nodes?states=NEW,RUNNING,UNHEALTHY,DECOMMISSIONING,DECOMMISSIONED,LOST,REBOOTED,SHUTDOWN")
        .path("nodes").path("node");
    list.forEach(n -> {
      List<String> labels = new ArrayList<>();
      n.path("nodeLabels").forEach(l -> labels.add(l.asText()));
      out.put(n.path("id").asText(), new NodeView(n.path("state").asText(), labels));
    });
    return out;
  }

  String nodeState(Node n) throws IOException {
    NodeView v = nodeViews().get(n.id());
    return v == null ? "" : v.state();
  }

  /** Every NodeManager whose process runs is RUNNING at the active RM. */
  boolean allNodesRunning() throws IOException {
    Map<String, NodeView> byId = nodeViews();
    for (Node n : nodes) {
      NodeView v = byId.get(n.id());
      if (n.nm != null && (v == null || !v.state().equals("RUNNING"))) {
        return false;
      }
    }
    return true;
  }

  private boolean labelsShown() throws IOException {
    Map<String, NodeView> byId = nodeViews();
    for (int i : labelNodes) {
      NodeView v = byId.get(nodes.get(i).id());
      if (v == null || !v.labels().contains(LABEL)) {
        return false;
      }
    }
    return true;
  }

  String nodesLine() {
    try {
      List<String> parts = new ArrayList<>();
      nodeViews().forEach((id, v) -> parts.add(id + "=" + v.state()));
      return "nodes " + (parts.isEmpty() ? "(none)" : String.join(" ", parts));
    } catch (IOException | IllegalStateException e) {
      return "nodes unknown (" + e.getMessage() + ")";
    }
  }

  // ---- web apps, addresses ----

  static WebApp webApp(Class<?> c, String field, Object o) {
    try {
      return (WebApp) Main.field(c, field).get(o);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot reach the web app of " + c.getSimpleName() + ": " + e, e);
    }
  }

  /**
   * Gives a YARN web app its own Guice pipeline back. WebApps registers Jetty's "guice"
   * filter by class name, so Jetty builds a GuiceFilter that routes through Guice's static
   * pipeline, which holds whichever injector was created last: in one JVM the last
   * NodeManager would answer on every web port, and the RM's /ws/v1/cluster/* would be a 404.
   * Each WebApp keeps the GuiceFilter its own injector built; put that one into the holder.
   */
  static void isolate(WebApp app) {
    try {
      GuiceFilter own = (GuiceFilter) Main.field(WebApp.class, "guiceFilter").get(app);
      FilterHolder holder = app.httpServer().getWebAppContext().getServletHandler().getFilter("guice");
      if (own == null || holder == null) {
        throw new IllegalStateException("web app " + app.name() + " has no guice filter to isolate");
      }
      Main.field(FilterHolder.class, "_filter").set(holder, own);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot isolate web app " + app.name() + ": " + e, e);
    }
  }

  /** A port free on host now (the NodeManager needs fixed ports to keep its node id). */
  static int freePort(String host) throws IOException {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress(host, 0));
      return s.getLocalPort();
    }
  }

  static boolean portFree(String host, int port) {
    try (ServerSocket s = new ServerSocket()) {
      s.bind(new InetSocketAddress(host, port));
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** The node hosts must be loopback addresses that name themselves (no /etc/hosts entry). */
  static void checkLoopback(String host) throws IOException {
    InetAddress a = InetAddress.getByName(host);
    if (!a.isLoopbackAddress()) {
      throw new IllegalArgumentException("NodeManager host " + host + " is not a loopback address");
    }
    String canonical = a.getCanonicalHostName();
    if (!canonical.equals(host)) {
      throw new IllegalStateException("NodeManager host " + host + " resolves back to '" + canonical
          + "' (an /etc/hosts entry?): its node id would not be " + host + ":port; remove that entry");
    }
  }

  static Set<Integer> parseIndices(String option, String v, int n) {
    Set<Integer> out = new LinkedHashSet<>();
    if (v.isBlank()) {
      return out;
    }
    for (String s : v.split(",")) {
      try {
        int i = Integer.parseInt(s.trim());
        if (i < 0 || i >= n) {
          throw new NumberFormatException("out of range");
        }
        out.add(i);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("option --" + option + "=" + v + ": '" + s
            + "' is not a NodeManager index 0.." + (n - 1));
      }
    }
    return out;
  }
}
