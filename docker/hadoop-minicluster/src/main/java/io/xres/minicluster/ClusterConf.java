package io.xres.minicluster;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.webproxy.WebAppProxyServer;

/**
 * What an AM must take from the cluster and cannot guess (issue 40, item 5), as cluster modes:
 *
 * <ul>
 *   <li>{@code --http-policy=HTTPS_ONLY}: yarn.http.policy HTTPS_ONLY; the RM's and the
 *       NodeManagers' web servers (and a standalone web proxy) serve HTTPS only, on the ports
 *       their HTTP addresses would have (yarn.resourcemanager.webapp.https.address is the
 *       webapp port), with a self-signed certificate for localhost and 127.0.0.x made by the
 *       JDK's keytool (its PEM: XRES_SSL_CERT in cluster.env).
 *   <li>{@code --web-proxy=true}: a standalone web proxy (Hadoop's WebAppProxyServer, in this
 *       JVM) at yarn.web-proxy.address (localhost, a free port: XRES_WEB_PROXY_URL); the RM
 *       then serves no proxy of its own.
 *   <li>{@code --amrm-proxy=true}: every NodeManager runs Hadoop's AMRMProxy
 *       (yarn.nodemanager.amrmproxy.enabled, its default interceptor pipeline, which forwards
 *       to the RM) on its own address and one port for all (XRES_AMRM_PROXY_PORT). The AMRMProxy
 *       replaces the AM container's AMRMToken with its own. The node's configuration for
 *       containers is node-conf/ (XRES_NODE_CONF_DIR): the client configuration with
 *       yarn.resourcemanager.scheduler.address = ${env.NM_HOST}:port, the AMRMProxy of the
 *       node the container runs on (a real node's yarn-site says localhost:8049; these
 *       NodeManagers share one host and bind 127.0.0.x). run.sh exports HADOOP_CONF_DIR=node-conf
 *       to this JVM, and the NodeManagers pass it to every container as Hadoop's
 *       yarn.nodemanager.env-whitelist does on a real node. What is simulated: the
 *       NodeManagers' own (daemon) configuration keeps the RM's scheduler address (their
 *       AMRMProxy forwards there); on a real node both are one yarn-site.xml.
 * </ul>
 */
final class ClusterConf {
  static final String HTTPS_ONLY = "HTTPS_ONLY";
  /** The keystore password (a test cluster's self-signed certificate). */
  private static final String STORE_PASS = "xres-minicluster";

  private static boolean https;
  private static boolean webProxy;
  private static boolean amrmProxy;
  private static int amrmProxyPort;
  private static File certPem;
  private static WebAppProxyServer proxyServer;

  private ClusterConf() {}

  /** Adds this mode's options to Main's. */
  static void defaults(Map<String, String> d) {
    d.put("http-policy", "HTTP_ONLY");
    d.put("web-proxy", "false");
    d.put("amrm-proxy", "false");
  }

  static void validate(Map<String, String> opt) {
    if (!List.of("HTTP_ONLY", HTTPS_ONLY).contains(opt.get("http-policy"))) {
      throw new IllegalArgumentException("option --http-policy=" + opt.get("http-policy") + ": want HTTP_ONLY or HTTPS_ONLY");
    }
    for (String k : List.of("web-proxy", "amrm-proxy")) {
      if (!List.of("true", "false").contains(opt.get(k))) {
        throw new IllegalArgumentException("option --" + k + "=" + opt.get(k) + ": want true or false");
      }
    }
  }

  static boolean https(Map<String, String> opt) {
    return HTTPS_ONLY.equals(opt.get("http-policy"));
  }

  /** Sets the cluster-wide keys before any daemon starts. */
  static void configure(YarnConfiguration conf, Map<String, String> opt, File work, List<String> rmIds,
      int nodemanagers) throws IOException, InterruptedException {
    https = https(opt);
    webProxy = Boolean.parseBoolean(opt.get("web-proxy"));
    amrmProxy = Boolean.parseBoolean(opt.get("amrm-proxy"));
    if (https) {
      conf.set("yarn.http.policy", HTTPS_ONLY);
      for (String id : rmIds) {
        conf.set(Yarn.key("yarn.resourcemanager.webapp.https.address", id),
            conf.get(Yarn.key("yarn.resourcemanager.webapp.address", id)));
      }
      File ks = keystore(new File(work, "ssl"));
      // WebAppUtils.loadSslConfiguration reads these from ssl-server.xml, then the daemon's conf.
      conf.set("ssl.server.keystore.location", ks.getPath());
      conf.set("ssl.server.keystore.type", "jks");
      conf.set("ssl.server.keystore.password", STORE_PASS);
      conf.set("ssl.server.keystore.keypassword", STORE_PASS);
      // The standalone web proxy reads ssl-server.xml alone (from the class path: jvm-conf/).
      Map<String, String> ssl = new LinkedHashMap<>();
      for (String k : List.of("location", "type", "password", "keypassword")) {
        ssl.put("ssl.server.keystore." + k, conf.get("ssl.server.keystore." + k));
      }
      Main.writeXml(new File(new File(work, "jvm-conf"), "ssl-server.xml"), ssl);
    }
    if (webProxy) {
      conf.set("yarn.web-proxy.address", "localhost:" + Yarn.freePort("localhost"));
    }
    if (amrmProxy) {
      conf.setBoolean("yarn.nodemanager.amrmproxy.enabled", true);
      List<String> nodeHosts = new ArrayList<>();
      for (int i = 0; i < nodemanagers; i++) {
        nodeHosts.add("127.0.0." + (i + 2)); // Main's NodeManager hosts
      }
      amrmProxyPort = portFreeOnAll(nodeHosts);
    }
  }

  /** Per-NodeManager keys (its HTTPS address, its AMRMProxy address). */
  static void node(YarnConfiguration c, Yarn.Node n) {
    if (https) {
      c.set("yarn.nodemanager.webapp.https.address", n.bindHost + ":" + n.webPort);
    }
    if (amrmProxy) {
      c.set("yarn.nodemanager.amrmproxy.address", n.bindHost + ":" + amrmProxyPort);
    }
  }

  /** Starts the standalone web proxy, once the RM runs. */
  static void start(Configuration conf) {
    if (!webProxy) {
      return;
    }
    WebAppProxyServer p = new WebAppProxyServer();
    p.init(new YarnConfiguration(conf));
    p.start();
    proxyServer = p;
  }

  static void stop() {
    if (proxyServer != null) {
      proxyServer.stop();
    }
  }

  /** Keys of the client configuration (yarn-site.xml) this mode adds. */
  static List<String> clientKeys(List<String> rmIds) {
    List<String> keys = new ArrayList<>();
    for (String id : rmIds) {
      keys.add(Yarn.key("yarn.resourcemanager.webapp.https.address", id));
    }
    keys.add("yarn.web-proxy.address");
    return keys;
  }

  /**
   * After the client configuration is written: the node configuration for containers, and
   * this mode's lines of cluster.env.
   */
  static void written(File confDir, File work, Configuration eff, Map<String, String> env) throws IOException {
    if (https) {
      env.put("XRES_RM_WEBAPP_URL", env.get("XRES_RM_WEBAPP_URL").replaceFirst("^http://", "https://"));
      env.put("XRES_SSL_CERT", certPem.getPath());
    }
    env.put("XRES_HTTP_POLICY", https ? HTTPS_ONLY : "HTTP_ONLY");
    if (webProxy) {
      env.put("XRES_WEB_PROXY_URL", (https ? "https://" : "http://") + eff.get("yarn.web-proxy.address"));
    }
    if (amrmProxy) {
      File node = new File(work, "node-conf");
      Files.createDirectories(node.toPath());
      for (File f : confDir.listFiles((d, name) -> name.endsWith(".xml"))) {
        if (!f.getName().equals("yarn-site.xml")) {
          Files.copy(f.toPath(), new File(node, f.getName()).toPath(), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
      }
      Configuration site = new Configuration(false);
      site.addResource(new org.apache.hadoop.fs.Path(new File(confDir, "yarn-site.xml").toURI()));
      Map<String, String> yarn = new LinkedHashMap<>();
      for (Map.Entry<String, String> e : site) {
        yarn.put(e.getKey(), e.getValue());
      }
      yarn.put("yarn.resourcemanager.scheduler.address", "${env.NM_HOST}:" + amrmProxyPort);
      Main.writeXml(new File(node, "yarn-site.xml"), yarn);
      env.put("XRES_NODE_CONF_DIR", node.getPath());
      env.put("XRES_AMRM_PROXY_PORT", Integer.toString(amrmProxyPort));
    }
  }

  /** A JKS keystore with a self-signed certificate for localhost and 127.0.0.1-9, and its PEM. */
  private static File keystore(File dir) throws IOException, InterruptedException {
    Files.createDirectories(dir.toPath());
    File ks = new File(dir, "keystore.jks");
    certPem = new File(dir, "cert.pem");
    Files.deleteIfExists(ks.toPath());
    StringBuilder san = new StringBuilder("SAN=dns:localhost");
    for (int i = 1; i < 10; i++) {
      san.append(",ip:127.0.0.").append(i);
    }
    keytool("-genkeypair", "-alias", "xres", "-keyalg", "RSA", "-keysize", "2048", "-validity", "30",
        "-dname", "CN=localhost", "-ext", san.toString(), "-storetype", "JKS",
        "-keystore", ks.getPath(), "-storepass", STORE_PASS, "-keypass", STORE_PASS);
    keytool("-exportcert", "-rfc", "-alias", "xres", "-keystore", ks.getPath(), "-storepass", STORE_PASS,
        "-file", certPem.getPath());
    return ks;
  }

  private static void keytool(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(new File(System.getProperty("java.home"), "bin/keytool").getPath());
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.waitFor() != 0) {
      throw new IOException("keytool " + args[0] + " failed: " + out.trim());
    }
  }

  /** A port free on every NodeManager host (each AMRMProxy binds its own host on it). */
  private static int portFreeOnAll(List<String> hosts) throws IOException {
    for (int tries = 0; tries < 50; tries++) {
      int port = Yarn.freePort(hosts.get(0));
      boolean ok = true;
      for (String h : hosts) {
        try (ServerSocket s = new ServerSocket()) {
          s.bind(new InetSocketAddress(h, port));
        } catch (IOException e) {
          ok = false;
          break;
        }
      }
      if (ok) {
        return port;
      }
    }
    throw new IOException("no port free on every NodeManager host " + hosts);
  }
}
