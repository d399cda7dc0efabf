package io.xres.sparkjob;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.resource.ResourceInformation;

/**
 * Runs one task per executor slot; each task writes, as soon as it runs, the file
 * &lt;dir&gt;/sparktask.&lt;its executor's $CONTAINER_ID&gt; holding one tab-separated line
 * (executor id, $CONTAINER_ID, the task's GPU addresses comma-separated), then holds its
 * executor (and so the executor's YARN container and GPUs) until &lt;dir&gt;/release exists.
 *
 * <p>Arguments: folder (a local path; every NodeManager is this host), number of tasks.
 */
public final class Hold {
  private Hold() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      throw new IllegalArgumentException("usage: Hold <folder> <tasks>");
    }
    String dir = args[0];
    int tasks = Integer.parseInt(args[1]);
    try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("xres-sparkjob-hold"))) {
      List<Integer> ids = IntStream.range(0, tasks).boxed().collect(Collectors.toList());
      long done =
          sc.parallelize(ids, tasks)
              .map(
                  i -> {
                    ResourceInformation gpu = TaskContext.get().resourcesJMap().get("gpu");
                    String container = System.getenv("CONTAINER_ID");
                    String line =
                        String.join(
                            "\t",
                            SparkEnv.get().executorId(),
                            container,
                            gpu == null ? "" : String.join(",", gpu.addresses()));
                    Path out = Path.of(dir, "sparktask." + container);
                    Path tmp = Path.of(dir, "sparktask." + container + ".tmp");
                    Files.write(tmp, List.of(line), StandardCharsets.UTF_8);
                    Files.move(tmp, out);
                    Path release = Path.of(dir, "release");
                    while (!Files.exists(release)) {
                      Thread.sleep(200);
                    }
                    return i;
                  })
              .count();
      if (done != tasks) {
        throw new IllegalStateException("ran " + done + " of " + tasks + " tasks");
      }
    }
  }
}
