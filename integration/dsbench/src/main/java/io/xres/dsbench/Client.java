package io.xres.dsbench;

import java.io.File;
import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.yarn.api.ApplicationConstants;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.LocalResource;
import org.apache.hadoop.yarn.api.records.LocalResourceType;
import org.apache.hadoop.yarn.api.records.LocalResourceVisibility;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.URL;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * The submitting side of the Java baseline in {@code make bench-am}.
 *
 * <p>{@code Client HADOOP_CONF_DIR own NAME WORKERS MEMORY_MB VCORES RESOURCES AM_MEMORY_MB -- COMMAND...}
 * submits {@link AppMaster}, a Java ApplicationMaster built the way Hadoop's DistributedShell is
 * (YarnClient here; AMRMClientAsync with a 1 s heartbeat and NMClientAsync in the AM; the AM
 * jar localized from HDFS, the Hadoop jars on the AM's class path as yarn.application.classpath
 * puts them on a real cluster), asking WORKERS containers of MEMORY_MB, VCORES and RESOURCES
 * ({@code yarn.io/gpu=1,...}) that each run COMMAND. It prints {@code submitted <application id>}
 * on stdout, then follows the application once a second until it ends, as DistributedShell's
 * client does.
 *
 * <p>{@code Client HADOOP_CONF_DIR dshell DSHELL_JAR ARGS...} runs Hadoop's own DistributedShell
 * client instead (its jar must also be on this class path), with ARGS as its command line, after
 * giving it the cluster's configuration and the AM class path.
 */
public final class Client {
  private Client() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      usage();
    }
    YarnConfiguration conf = load(new File(args[0]));
    // The AM runs on a NodeManager with no Hadoop installation: its class path is this one
    // (absolute local paths, all on this host) plus the cluster's configuration folder.
    List<String> cp = new ArrayList<>();
    cp.add(new File(args[0]).getAbsolutePath());
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!e.isEmpty()) {
        cp.add(new File(e).getAbsolutePath());
      }
    }
    conf.setStrings(YarnConfiguration.YARN_APPLICATION_CLASSPATH, cp.toArray(new String[0]));
    switch (args[1]) {
      case "own":
        System.exit(own(conf, Arrays.copyOfRange(args, 2, args.length)));
        break;
      case "dshell":
        System.exit(dshell(conf, Arrays.copyOfRange(args, 2, args.length)));
        break;
      default:
        usage();
    }
  }

  private static void usage() {
    System.err.println("usage: Client HADOOP_CONF_DIR own NAME WORKERS MEMORY_MB VCORES RESOURCES AM_MEMORY_MB -- COMMAND...\n"
        + "       Client HADOOP_CONF_DIR dshell DSHELL_JAR DSHELL_CLIENT_ARGS...");
    System.exit(2);
  }

  static YarnConfiguration load(File confDir) {
    YarnConfiguration conf = new YarnConfiguration();
    for (String f : new String[] {"core-site.xml", "hdfs-site.xml", "yarn-site.xml", "resource-types.xml"}) {
      File file = new File(confDir, f);
      if (file.isFile()) {
        conf.addResource(new Path(file.getAbsolutePath()));
      }
    }
    return conf;
  }

  /** Hadoop's DistributedShell client, loaded by name (its jar is optional at build time). */
  private static int dshell(Configuration conf, String[] args) throws Exception {
    if (args.length < 1) {
      usage();
    }
    List<String> dsArgs = new ArrayList<>(Arrays.asList(args).subList(1, args.length));
    dsArgs.add(0, args[0]);
    dsArgs.add(0, "-jar");
    Class<?> k = Class.forName("org.apache.hadoop.yarn.applications.distributedshell.Client");
    Constructor<?> ctor = k.getConstructor(Configuration.class);
    Object client = ctor.newInstance(conf);
    boolean ok = (Boolean) k.getMethod("init", String[].class).invoke(client, (Object) dsArgs.toArray(new String[0]));
    if (!ok) {
      return 2;
    }
    return (Boolean) k.getMethod("run").invoke(client) ? 0 : 1;
  }

  private static int own(YarnConfiguration conf, String[] args) throws Exception {
    int dash = Arrays.asList(args).indexOf("--");
    if (dash != 6 || dash == args.length - 1) {
      usage();
    }
    String name = args[0];
    String workers = args[1];
    String memory = args[2];
    String vcores = args[3];
    String resources = args[4];
    int amMemory = Integer.parseInt(args[5]);
    String command = String.join(" ", Arrays.copyOfRange(args, dash + 1, args.length));

    YarnClient yarn = YarnClient.createYarnClient();
    yarn.init(conf);
    yarn.start();
    try {
      YarnClientApplication app = yarn.createApplication();
      ApplicationSubmissionContext ctx = app.getApplicationSubmissionContext();
      ApplicationId id = ctx.getApplicationId();

      // Ship this jar to HDFS for the AM container, as DistributedShell ships AppMaster.jar.
      File jar = ownJar();
      FileSystem fs = FileSystem.get(conf);
      Path dst = new Path(fs.getHomeDirectory(), ".dsbench/" + id + "/" + jar.getName());
      fs.copyFromLocalFile(false, true, new Path(jar.getAbsolutePath()), dst);
      FileStatus st = fs.getFileStatus(dst);
      Map<String, LocalResource> local = new HashMap<>();
      local.put("AppMaster.jar", LocalResource.newInstance(URL.fromPath(fs.makeQualified(dst)),
          LocalResourceType.FILE, LocalResourceVisibility.APPLICATION, st.getLen(), st.getModificationTime()));

      StringBuilder cp = new StringBuilder("./AppMaster.jar");
      for (String e : conf.getStrings(YarnConfiguration.YARN_APPLICATION_CLASSPATH)) {
        cp.append(ApplicationConstants.CLASS_PATH_SEPARATOR).append(e.trim());
      }
      Map<String, String> env = new HashMap<>();
      env.put("CLASSPATH", cp.toString());
      env.put("JAVA_HOME", System.getProperty("java.home"));

      String log = ApplicationConstants.LOG_DIR_EXPANSION_VAR;
      String amCommand = ApplicationConstants.Environment.JAVA_HOME.$$() + "/bin/java -Xmx" + amMemory + "m "
          + AppMaster.class.getName() + " " + workers + " " + memory + " " + vcores + " " + resources + " "
          + quote(command) + " 1>" + log + "/AppMaster.stdout 2>" + log + "/AppMaster.stderr";
      ctx.setApplicationName(name);
      ctx.setApplicationType("DSBENCH");
      ctx.setMaxAppAttempts(1);
      ctx.setResource(Resource.newInstance(amMemory, 1));
      ctx.setAMContainerSpec(ContainerLaunchContext.newInstance(local, env, List.of(amCommand), null, null, null));
      yarn.submitApplication(ctx);
      System.out.println("submitted " + id);
      System.out.flush();

      while (true) {
        Thread.sleep(1000);
        ApplicationReport r = yarn.getApplicationReport(id);
        YarnApplicationState s = r.getYarnApplicationState();
        if (s == YarnApplicationState.FINISHED || s == YarnApplicationState.FAILED || s == YarnApplicationState.KILLED) {
          System.out.println(id + " finished: " + s + " " + r.getFinalApplicationStatus());
          fs.delete(dst.getParent(), true);
          return s == YarnApplicationState.FINISHED ? 0 : 1;
        }
      }
    } finally {
      yarn.stop();
    }
  }

  /** The jar this class was loaded from. */
  private static File ownJar() throws Exception {
    File f = new File(Client.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    if (!f.isFile()) {
      throw new IllegalStateException("dsbench must run from its jar (target/xres-dsbench-0.1.0.jar), not " + f);
    }
    return f;
  }

  /** Single-quotes s for the NodeManager's launch script. */
  static String quote(String s) {
    return "'" + s.replace("'", "'\\''") + "'";
  }
}
