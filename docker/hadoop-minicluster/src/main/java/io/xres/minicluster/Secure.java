package io.xres.minicluster;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.minikdc.MiniKdc;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * The secure profile: a MiniKdc in this JVM, keytabs and a krb5.conf in the state folder,
 * and the configuration that makes HDFS and YARN authenticate with Kerberos and put their
 * web apps (the RM REST API included) behind SPNEGO.
 *
 * <p>One JVM has one login: MiniYARNCluster skips each daemon's own keytab login, so every
 * RPC server runs as the service principal {@code hadoop/localhost}. Its keytab also holds
 * {@code HTTP/localhost}, the SPNEGO principal of every web app. The user the tests log in
 * as is {@code client}, with a keytab of its own. Host names are {@code localhost}
 * throughout (no {@code _HOST}): the NodeManagers bind the machine's host name, which a
 * principal should not depend on.
 *
 * <p>Start it before anything touches UserGroupInformation or Kerberos classes: MiniKdc
 * sets {@code java.security.krb5.conf}, and Hadoop caches the default realm on first use.
 */
final class Secure {
  static final String SERVICE = "hadoop/localhost";
  static final String HTTP = "HTTP/localhost";
  static final String CLIENT = "client";

  final MiniKdc kdc;
  final File dir;
  final File serviceKeytab;
  final File clientKeytab;
  final File krb5Conf;

  private Secure(MiniKdc kdc, File dir) {
    this.kdc = kdc;
    this.dir = dir;
    this.serviceKeytab = new File(dir, "service.keytab");
    this.clientKeytab = new File(dir, "client.keytab");
    this.krb5Conf = new File(dir, "krb5.conf");
  }

  /** Starts the KDC under dir (MiniKdc's own files in dir/kdc) and writes keytabs and krb5.conf. */
  static Secure start(File dir) throws Exception {
    Files.createDirectories(dir.toPath());
    File kdcDir = new File(dir, "kdc");
    Files.createDirectories(kdcDir.toPath());
    Properties p = MiniKdc.createConf();
    p.setProperty(MiniKdc.KDC_BIND_ADDRESS, "localhost");
    MiniKdc kdc = new MiniKdc(p, kdcDir);
    kdc.start();
    Secure s = new Secure(kdc, dir);
    kdc.createPrincipal(s.serviceKeytab, SERVICE, HTTP);
    kdc.createPrincipal(s.clientKeytab, CLIENT);
    // A krb5.conf for clients (gokrb5, kinit): TCP only, the realm's KDC, localhost in the realm.
    String krb5 = "# written by the xres minicluster launcher (secure profile)\n"
        + "[libdefaults]\n"
        + "  default_realm = " + kdc.getRealm() + "\n"
        + "  dns_lookup_realm = false\n"
        + "  dns_lookup_kdc = false\n"
        + "  udp_preference_limit = 1\n"
        + "  ticket_lifetime = 24h\n"
        + "  forwardable = true\n"
        + "[realms]\n"
        + "  " + kdc.getRealm() + " = {\n"
        + "    kdc = " + kdc.getHost() + ":" + kdc.getPort() + "\n"
        + "  }\n"
        + "[domain_realm]\n"
        + "  localhost = " + kdc.getRealm() + "\n"
        + "  .localhost = " + kdc.getRealm() + "\n";
    Files.writeString(s.krb5Conf.toPath(), krb5, StandardCharsets.UTF_8);
    return s;
  }

  String principal(String name) {
    return name + "@" + kdc.getRealm();
  }

  /** Sets Kerberos authentication, the daemons' principals and keytabs, and SPNEGO. */
  void configure(Configuration conf) {
    String kt = serviceKeytab.getPath();
    conf.set("hadoop.security.authentication", "kerberos");
    conf.set("hadoop.security.auth_to_local", "DEFAULT");
    // Web apps: SPNEGO with HTTP/localhost (the RM swaps in its own filter initializer).
    conf.set("hadoop.http.authentication.type", "kerberos");
    conf.setBoolean("hadoop.http.authentication.simple.anonymous.allowed", false);
    conf.set("hadoop.http.authentication.kerberos.principal", principal(HTTP));
    conf.set("hadoop.http.authentication.kerberos.keytab", kt);
    // HDFS.
    conf.set("dfs.namenode.kerberos.principal", principal(SERVICE));
    conf.set("dfs.namenode.keytab.file", kt);
    conf.set("dfs.datanode.kerberos.principal", principal(SERVICE));
    conf.set("dfs.datanode.keytab.file", kt);
    conf.set("dfs.web.authentication.kerberos.principal", principal(HTTP));
    conf.set("dfs.web.authentication.kerberos.keytab", kt);
    conf.setBoolean("dfs.block.access.token.enable", true);
    conf.set("dfs.data.transfer.protection", "authentication");
    // A DataNode on unprivileged ports without HTTPS (test clusters only).
    conf.setBoolean("ignore.secure.ports.for.testing", true);
    // YARN.
    conf.set("yarn.resourcemanager.principal", principal(SERVICE));
    conf.set("yarn.resourcemanager.keytab", kt);
    conf.set("yarn.nodemanager.principal", principal(SERVICE));
    conf.set("yarn.nodemanager.keytab", kt);
    conf.set("yarn.resourcemanager.webapp.spnego-principal", principal(HTTP));
    conf.set("yarn.resourcemanager.webapp.spnego-keytab-file", kt);
    conf.set("yarn.nodemanager.webapp.spnego-principal", principal(HTTP));
    conf.set("yarn.nodemanager.webapp.spnego-keytab-file", kt);
  }

  /** Logs the JVM in as the service principal; the RPC servers run as this user. */
  void login(Configuration conf) throws Exception {
    UserGroupInformation.setConfiguration(conf);
    UserGroupInformation.loginUserFromKeytab(principal(SERVICE), serviceKeytab.getPath());
  }

  /** What clients need, for cluster.env. */
  Map<String, String> env() {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("XRES_SECURE", "true");
    env.put("XRES_KRB5_CONF", krb5Conf.getPath());
    env.put("XRES_KDC", kdc.getHost() + ":" + kdc.getPort());
    env.put("XRES_REALM", kdc.getRealm());
    env.put("XRES_CLIENT_PRINCIPAL", principal(CLIENT));
    env.put("XRES_CLIENT_KEYTAB", clientKeytab.getPath());
    env.put("XRES_SERVICE_PRINCIPAL", principal(SERVICE));
    env.put("XRES_SERVICE_KEYTAB", serviceKeytab.getPath());
    env.put("XRES_HTTP_PRINCIPAL", principal(HTTP));
    return env;
  }

  void stop() {
    kdc.stop();
  }
}
