package io.xres.minicluster;

import java.lang.reflect.Method;

import org.apache.hadoop.yarn.server.resourcemanager.ClusterMetrics;

/**
 * The few Hadoop calls whose signature differs between the versions the launcher builds
 * against (3.1 to 3.5). Each is made by reflection, so that one source tree compiles against
 * all of them.
 */
final class Compat {
  private Compat() {}

  /**
   * Drops the JVM-global ClusterMetrics singleton, so that the next ResourceManager started in
   * this JVM (rm-restart, HA) registers fresh metrics. ClusterMetrics.destroy() is public from
   * Hadoop 3.2 on and package-private in 3.1.
   */
  static void destroyClusterMetrics() {
    try {
      Method m = ClusterMetrics.class.getDeclaredMethod("destroy");
      m.setAccessible(true);
      m.invoke(null);
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw new IllegalStateException("cannot reset " + ClusterMetrics.class.getName()
          + " (destroy()) before starting a ResourceManager: " + e, e);
    }
  }
}
