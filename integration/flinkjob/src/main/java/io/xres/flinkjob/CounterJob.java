package io.xres.flinkjob;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.DiscardingSink;
import org.apache.flink.streaming.api.functions.source.RichParallelSourceFunction;

/**
 * An unbounded streaming job for xres's Flink reactive-mode test: every parallel instance of
 * the source counts up at a modest rate, the counts are keyed by their remainder and mapped,
 * and a sink drops them. Every operator runs at the parallelism Flink's reactive mode gives it
 * (the slots of the TaskManagers that registered): nothing here fixes a parallelism.
 *
 * <p>Arguments (optional): records per second of each source instance (default 20); a folder
 * where each instance of the map writes, when it opens, what its task sees: its subtask index,
 * the parallelism, and the YARN container and GPUs of its process (CONTAINER_ID,
 * CUDA_VISIBLE_DEVICES), in a file named after the container.
 */
public final class CounterJob {

    private CounterJob() {}

    public static void main(String[] args) throws Exception {
        int rate = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        String reportDir = args.length > 1 ? args[1] : "";
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.addSource(new Counter(rate))
                .name("counter")
                .keyBy(new Remainder())
                .map(new Square(reportDir))
                .name("square")
                .addSink(new DiscardingSink<>())
                .name("discard");
        env.execute("xres-flink-reactive");
    }

    /** Counts 0, 1, 2, ... in each instance, rate records per second, until cancelled. */
    static final class Counter extends RichParallelSourceFunction<Long> {
        private final int rate;
        private volatile boolean running = true;

        Counter(int rate) {
            this.rate = Math.max(rate, 1);
        }

        @Override
        public void run(SourceContext<Long> ctx) throws Exception {
            long n = 0;
            long pause = Math.max(1000L / rate, 1L);
            while (running) {
                synchronized (ctx.getCheckpointLock()) {
                    ctx.collect(n++);
                }
                Thread.sleep(pause);
            }
        }

        @Override
        public void cancel() {
            running = false;
        }
    }

    /** Keys a count by its remainder modulo 64: keys spread over every parallel instance. */
    static final class Remainder implements KeySelector<Long, Long> {
        @Override
        public Long getKey(Long n) {
            return n % 64;
        }
    }

    /** Squares a count; on open, reports what its task sees (see the class comment). */
    static final class Square extends RichMapFunction<Long, Long> {
        private final String reportDir;

        Square(String reportDir) {
            this.reportDir = reportDir;
        }

        @Override
        public void open(OpenContext ctx) throws IOException {
            if (reportDir.isEmpty()) {
                return;
            }
            TaskInfo task = getRuntimeContext().getTaskInfo();
            String container = env("CONTAINER_ID");
            String report = "subtask=" + task.getIndexOfThisSubtask() + "\n"
                    + "parallelism=" + task.getNumberOfParallelSubtasks() + "\n"
                    + "container=" + container + "\n"
                    + "cuda=" + env("CUDA_VISIBLE_DEVICES") + "\n";
            Path dir = Paths.get(reportDir);
            Path tmp = Files.createTempFile(dir, "task.", ".tmp");
            Files.write(tmp, report.getBytes(StandardCharsets.UTF_8));
            Files.move(tmp, dir.resolve("task." + container), StandardCopyOption.REPLACE_EXISTING,
                    StandardCopyOption.ATOMIC_MOVE);
        }

        private static String env(String name) {
            String v = System.getenv(name);
            return v == null ? "" : v;
        }

        @Override
        public Long map(Long n) {
            return n * n;
        }
    }
}
