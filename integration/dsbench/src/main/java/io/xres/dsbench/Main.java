package io.xres.dsbench;

import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.yarn.applications.distributedshell.Client;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * Runs Hadoop's own DistributedShell client for {@code make bench-am}.
 *
 * <p>{@code Main HADOOP_CONF_DIR DSHELL_CLIENT_ARGS...} loads the cluster's configuration from
 * HADOOP_CONF_DIR, sets {@code yarn.application.classpath} to this JVM's class path (the
 * minicluster's NodeManagers run on this host and have no Hadoop installation, so the AM gets
 * the same local jars that a real cluster's NodeManagers would name), and runs DistributedShell's
 * {@link Client} with DSHELL_CLIENT_ARGS and {@code -jar} set to the jar that class was loaded
 * from (the AM jar DistributedShell ships to HDFS). Exit status: 0 when the application
 * succeeded, 1 when it did not, 2 on bad arguments.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: io.xres.dsbench.Main HADOOP_CONF_DIR DSHELL_CLIENT_ARGS...");
      System.exit(2);
    }
    File confDir = new File(args[0]).getAbsoluteFile();
    YarnConfiguration conf = new YarnConfiguration();
    for (String f : new String[] {"core-site.xml", "hdfs-site.xml", "yarn-site.xml", "resource-types.xml"}) {
      File file = new File(confDir, f);
      if (file.isFile()) {
        conf.addResource(new Path(file.getPath()));
      }
    }
    List<String> cp = new ArrayList<>();
    cp.add(confDir.getPath());
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!e.isEmpty()) {
        cp.add(new File(e).getAbsolutePath());
      }
    }
    conf.setStrings(YarnConfiguration.YARN_APPLICATION_CLASSPATH, cp.toArray(new String[0]));

    // The first jar on the class path holding DistributedShell wins (XRES_DSHELL_JAR goes
    // before Maven's); it is also the AM jar.
    File jar = new File(Client.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<String> dsArgs = new ArrayList<>(List.of("-jar", jar.getPath()));
    dsArgs.addAll(Arrays.asList(args).subList(1, args.length));
    System.err.println("dsbench: DistributedShell from " + jar);

    // init is false on -help or bad arguments; run is true when the application succeeded.
    Client client = new Client(conf);
    if (!client.init(dsArgs.toArray(new String[0]))) {
      System.exit(2);
    }
    System.exit(client.run() ? 0 : 1);
  }
}
