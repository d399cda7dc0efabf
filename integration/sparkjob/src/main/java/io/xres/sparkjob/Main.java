package io.xres.sparkjob;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.resource.ResourceInformation;

/**
 * Runs one task per executor slot and writes, per task, one tab-separated line: executor id,
 * NodeManager host ($NM_HOST) and the task's GPU addresses (comma-separated). Each task holds its slot for a few seconds, so all tasks run at once and
 * spread over the executors (one core each).
 *
 * <p>Arguments: output file (a local path; every NodeManager is this host), number of tasks.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      throw new IllegalArgumentException("usage: Main <output file> <tasks>");
    }
    Path out = Path.of(args[0]);
    int tasks = Integer.parseInt(args[1]);
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("xres-sparkjob"))) {
      List<Integer> ids = IntStream.range(0, tasks).boxed().collect(Collectors.toList());
      List<String> lines =
          sc.parallelize(ids, tasks)
              .map(
                  i -> {
                    TaskContext tc = TaskContext.get();
                    ResourceInformation gpu = tc.resourcesJMap().get("gpu");
                    SparkEnv env = SparkEnv.get();
                    Thread.sleep(4000);
                    return String.join(
                        "\t",
                        env.executorId(),
                        System.getenv("NM_HOST"),
                        String.join(",", gpu.addresses()));
                  })
              .collect();
      List<String> sorted = new ArrayList<>(lines);
      sorted.sort(null);
      Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
      Files.write(tmp, sorted, StandardCharsets.UTF_8);
      Files.move(tmp, out);
    }
  }
}
