package io.xres.javabench;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * Closed-loop load on the ResourceManager's getClusterMetrics through Hadoop's YarnClient.
 *
 * <p>Usage: {@code Main <HADOOP_CONF_DIR>}, then one request per stdin line,
 * {@code <callers> <warmup-seconds> <seconds>}; EOF ends the program. The Go side of the
 * benchmark drives it this way so that Go and Java rows can alternate in one run.
 * {@code Main <HADOOP_CONF_DIR> <callers,callers,...> <warmup-seconds> <seconds>} runs the
 * rows at once instead.
 *
 * <p>For each row, one shared YarnClient (as an application would hold one) is called by
 * that many threads back to back: first for the warm-up time (JIT, connection set-up; not
 * measured), then for the measured time. Each call's latency is recorded. One JSON line per
 * row goes to stdout:
 * {"impl":"java","callers":8,"calls":12345,"seconds":5.0,"p50_us":310.2,"p99_us":900.1,"cpu_ns":123}
 * where cpu_ns is the CPU time this JVM used during the measured time (all its threads).
 *
 * <p>On a Kerberized cluster, XRES_BENCH_PRINCIPAL and XRES_BENCH_KEYTAB name the client's
 * login (and -Djava.security.krb5.conf the Kerberos configuration); the RPC protection
 * (hadoop.rpc.protection) is whatever the configuration directory says.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 1 && args.length != 4) {
      System.err.println("usage: Main HADOOP_CONF_DIR [CALLERS[,CALLERS...] WARMUP_SECONDS SECONDS]");
      System.exit(2);
    }
    File confDir = new File(args[0]);
    YarnConfiguration conf = new YarnConfiguration();
    for (String f : new String[] {"core-site.xml", "yarn-site.xml"}) {
      File file = new File(confDir, f);
      if (file.isFile()) {
        conf.addResource(new Path(file.getAbsolutePath()));
      }
    }
    String principal = System.getenv("XRES_BENCH_PRINCIPAL");
    if (principal != null && !principal.isEmpty()) {
      UserGroupInformation.setConfiguration(conf);
      UserGroupInformation.loginUserFromKeytab(principal, System.getenv("XRES_BENCH_KEYTAB"));
    }
    YarnClient client = YarnClient.createYarnClient();
    client.init(conf);
    client.start();
    try {
      if (args.length == 4) {
        for (String c : args[1].split(",")) {
          row(client, Integer.parseInt(c.trim()), Double.parseDouble(args[2]), Double.parseDouble(args[3]));
        }
        return;
      }
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line; (line = in.readLine()) != null; ) {
        String[] f = line.trim().split("\\s+");
        if (f.length != 3) {
          throw new IllegalArgumentException("want '<callers> <warmup-seconds> <seconds>', got: " + line);
        }
        row(client, Integer.parseInt(f[0]), Double.parseDouble(f[1]), Double.parseDouble(f[2]));
      }
    } finally {
      client.stop();
    }
  }

  private static void row(YarnClient client, int n, double warmup, double seconds) throws Exception {
    run(client, n, warmup, false);
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    long cpu0 = os.getProcessCpuTime();
    long[] lat = run(client, n, seconds, true);
    long cpu = os.getProcessCpuTime() - cpu0;
    System.out.println(json(n, lat, seconds, cpu));
    System.out.flush();
  }

  /** Runs n callers for the given time; returns every call's latency in ns when measured. */
  private static long[] run(YarnClient client, int n, double seconds, boolean measure) throws Exception {
    AtomicBoolean stop = new AtomicBoolean();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    List<long[]> perThread = new ArrayList<>();
    int[] counts = new int[n];
    CountDownLatch start = new CountDownLatch(1);
    CountDownLatch done = new CountDownLatch(n);
    for (int i = 0; i < n; i++) {
      long[] buf = new long[1 << 20];
      perThread.add(buf);
      final int id = i;
      Thread t = new Thread(() -> {
        try {
          start.await();
          int k = 0;
          long[] b = buf;
          while (!stop.get()) {
            long t0 = System.nanoTime();
            client.getYarnClusterMetrics();
            long d = System.nanoTime() - t0;
            if (k == b.length) {
              b = Arrays.copyOf(b, b.length * 2);
              perThread.set(id, b);
            }
            b[k++] = d;
          }
          counts[id] = k;
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        } finally {
          done.countDown();
        }
      }, "caller-" + i);
      t.setDaemon(true);
      t.start();
    }
    start.countDown();
    Thread.sleep((long) (seconds * 1000));
    stop.set(true);
    done.await();
    if (failure.get() != null) {
      throw new RuntimeException("getClusterMetrics failed", failure.get());
    }
    if (!measure) {
      return new long[0];
    }
    int total = Arrays.stream(counts).sum();
    long[] all = new long[total];
    int off = 0;
    for (int i = 0; i < n; i++) {
      System.arraycopy(perThread.get(i), 0, all, off, counts[i]);
      off += counts[i];
    }
    Arrays.sort(all);
    return all;
  }

  private static double percentileMicros(long[] sorted, double p) {
    if (sorted.length == 0) {
      return 0;
    }
    int idx = (int) Math.ceil(p * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(idx, sorted.length - 1))] / 1000.0;
  }

  private static String json(int callers, long[] sorted, double seconds, long cpuNanos) {
    return String.format(java.util.Locale.ROOT,
        "{\"impl\":\"java\",\"callers\":%d,\"calls\":%d,\"seconds\":%.3f,\"p50_us\":%.1f,\"p99_us\":%.1f,\"cpu_ns\":%d}",
        callers, sorted.length, seconds, percentileMicros(sorted, 0.50), percentileMicros(sorted, 0.99), cpuNanos);
  }
}
