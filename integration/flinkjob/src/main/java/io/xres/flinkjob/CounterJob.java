package io.xres.flinkjob;

import org.apache.flink.api.common.functions.RichMapFunction;
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
 * <p>Argument (optional): records per second of each source instance (default 20).
 */
public final class CounterJob {

    private CounterJob() {}

    public static void main(String[] args) throws Exception {
        int rate = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.addSource(new Counter(rate))
                .name("counter")
                .keyBy(new Remainder())
                .map(new Square())
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

    static final class Square extends RichMapFunction<Long, Long> {
        @Override
        public Long map(Long n) {
            return n * n;
        }
    }
}
