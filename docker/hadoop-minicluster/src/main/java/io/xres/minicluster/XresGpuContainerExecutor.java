package io.xres.minicluster;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.exceptions.ConfigurationException;
import org.apache.hadoop.yarn.server.nodemanager.Context;
import org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor;
import org.apache.hadoop.yarn.server.nodemanager.containermanager.container.Container;
import org.apache.hadoop.yarn.server.nodemanager.containermanager.linux.privileged.PrivilegedOperationExecutor;
import org.apache.hadoop.yarn.server.nodemanager.containermanager.linux.resources.CGroupsHandler;
import org.apache.hadoop.yarn.server.nodemanager.containermanager.linux.resources.ResourceHandler;
import org.apache.hadoop.yarn.server.nodemanager.containermanager.linux.resources.ResourceHandlerException;
import org.apache.hadoop.yarn.server.nodemanager.containermanager.linux.runtime.docker.DockerRunCommand;
import org.apache.hadoop.yarn.server.nodemanager.containermanager.resourceplugin.DockerCommandPlugin;
import org.apache.hadoop.yarn.server.nodemanager.containermanager.resourceplugin.ResourcePlugin;
import org.apache.hadoop.yarn.server.nodemanager.executor.ContainerReacquisitionContext;
import org.apache.hadoop.yarn.server.nodemanager.executor.ContainerStartContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * TEST ONLY. The DefaultContainerExecutor (containers are plain processes of this user) with
 * what LinuxContainerExecutor adds for YARN's resource plugins, minus root: at init it asks each
 * configured ResourcePlugin for its ResourceHandler (as ResourceHandlerModule does) and
 * bootstraps it; around each launch it calls the handlers' preStart and postComplete, around a
 * recovered container reacquireContainer and postComplete (as LinuxContainerExecutor does). So
 * YARN's own GpuResourceHandlerImpl and GpuResourceAllocator assign the GPUs, record them in
 * the NM state store and serve them on the NM REST API.
 *
 * <p>What is simulated: the cgroups handler (no cgroup is created), the container-executor binary
 * (a script that records YARN's arguments; see {@link GpuMode#configure}), and what isolation or
 * Docker would do to the container's view of the GPUs, which is put into its environment for the
 * fake nvidia-smi: the host's fake GPUs (XRES_FAKE_GPUS, _MINORS, _HOST), in isolated mode YARN's
 * --excluded_gpus as XRES_FAKE_GPU_EXCLUDED_MINORS, in docker mode the environment YARN's
 * DockerCommandPlugin put on its docker run command (NVIDIA_VISIBLE_DEVICES) and
 * XRES_FAKE_DOCKER=1.
 */
public class XresGpuContainerExecutor extends DefaultContainerExecutor {
  private static final Logger LOG = LoggerFactory.getLogger(XresGpuContainerExecutor.class);

  private final List<ResourceHandler> handlers = new ArrayList<>();
  private final List<DockerCommandPlugin> dockerPlugins = new ArrayList<>();
  private String mode = "plugin";
  private File ceDir;
  private String hostEnv = "";

  @Override
  public void init(Context nmContext) throws IOException {
    super.init(nmContext);
    Configuration conf = getConf();
    mode = conf.get(GpuMode.KEY_MODE, "plugin");
    ceDir = new File(conf.get(GpuMode.KEY_CE_DIR, ""));
    hostEnv = conf.get(GpuMode.KEY_HOST_ENV, "");
    if (nmContext.getResourcePluginManager() == null) {
      throw new IOException("no ResourcePluginManager in the NodeManager's context: " + getClass().getSimpleName()
          + " needs yarn.nodemanager.resource-plugins");
    }
    CGroupsHandler cgroups = noCGroups();
    PrivilegedOperationExecutor privileged = PrivilegedOperationExecutor.getInstance(conf);
    for (Map.Entry<String, ResourcePlugin> e : nmContext.getResourcePluginManager().getNameToPlugins().entrySet()) {
      ResourceHandler h = e.getValue().createResourceHandler(nmContext, cgroups, privileged);
      if (h != null) {
        try {
          h.bootstrap(conf);
        } catch (ResourceHandlerException ex) {
          throw new IOException("bootstrap of the " + e.getKey() + " resource handler failed: " + ex.getMessage(), ex);
        }
        handlers.add(h);
      }
      DockerCommandPlugin d = e.getValue().getDockerCommandPluginInstance();
      if (d != null) {
        dockerPlugins.add(d);
      }
    }
    LOG.info("xres test executor, GPU mode {}: resource handlers {}, Docker plugins {}", mode, handlers, dockerPlugins);
  }

  @Override
  public int launchContainer(ContainerStartContext ctx) throws IOException, ConfigurationException {
    Container container = ctx.getContainer();
    ContainerId id = container.getContainerId();
    try {
      for (ResourceHandler h : handlers) {
        h.preStart(container);
      }
    } catch (ResourceHandlerException e) {
      releaseHandlers(id);
      throw new IOException("resource handlers' preStart failed for " + id + ": " + e.getMessage(), e);
    }
    try {
      simulate(container);
      return super.launchContainer(ctx);
    } finally {
      releaseHandlers(id);
    }
  }

  @Override
  public int reacquireContainer(ContainerReacquisitionContext ctx) throws IOException, InterruptedException {
    ContainerId id = ctx.getContainerId();
    for (ResourceHandler h : handlers) {
      try {
        h.reacquireContainer(id);
      } catch (ResourceHandlerException e) {
        LOG.warn("reacquireContainer of {} by {} failed", id, h, e);
      }
    }
    try {
      return super.reacquireContainer(ctx);
    } finally {
      releaseHandlers(id);
    }
  }

  private void releaseHandlers(ContainerId id) {
    for (ResourceHandler h : handlers) {
      try {
        h.postComplete(id);
      } catch (ResourceHandlerException e) {
        LOG.warn("postComplete of {} by {} failed", id, h, e);
      }
    }
  }

  /** What isolation or Docker would show the container, put into its environment. */
  private void simulate(Container container) throws IOException {
    ContainerId id = container.getContainerId();
    // The map the launch uses: DefaultContainerExecutor starts the container's script with it.
    Map<String, String> env = container.getLaunchContext().getEnvironment();
    for (String kv : hostEnv.split(";")) {
      int eq = kv.indexOf('=');
      if (eq > 0) {
        env.put(kv.substring(0, eq), kv.substring(eq + 1));
      }
    }
    switch (mode) {
      case "isolated": {
        // YARN's own arguments for the container-executor (--excluded_gpus: the minor numbers of
        // the GPUs the container may not open); none means it may open every GPU.
        File f = new File(ceDir, id.toString());
        if (!f.isFile()) {
          throw new IOException("isolated GPU mode: YARN ran no GPU operation for " + id + " (no " + f + ")");
        }
        List<String> args = Files.readAllLines(f.toPath(), StandardCharsets.UTF_8);
        String excluded = "";
        int i = args.indexOf("--excluded_gpus");
        if (i >= 0 && i + 1 < args.size()) {
          excluded = args.get(i + 1);
        }
        env.put("XRES_FAKE_GPU_EXCLUDED_MINORS", excluded);
        LOG.info("{}: YARN's GPU operation {}; the container sees no GPU of minor number [{}]", id, args, excluded);
        break;
      }
      case "docker":
      case "pluggable": {
        DockerRunCommand run = new DockerRunCommand(id.toString(), container.getUser(), "xres-minicluster-fake-image");
        for (DockerCommandPlugin d : dockerPlugins) {
          try {
            d.updateDockerRunCommand(run, container);
          } catch (Exception e) {
            throw new IOException("Docker plugin " + d + " failed for " + id + ": " + e.getMessage(), e);
          }
        }
        Map<String, String> dockerEnv = dockerEnv(run);
        env.put("XRES_FAKE_DOCKER", "1");
        env.remove("NVIDIA_VISIBLE_DEVICES");
        env.putAll(dockerEnv);
        LOG.info("{}: docker run environment from YARN's Docker plugins: {}", id, dockerEnv);
        break;
      }
      default:
        break;
    }
  }

  /** DockerRunCommand.getEnv(), by reflection: not in every Hadoop version's DockerRunCommand. */
  @SuppressWarnings("unchecked")
  private static Map<String, String> dockerEnv(DockerRunCommand run) throws IOException {
    try {
      Method m = DockerRunCommand.class.getMethod("getEnv");
      return (Map<String, String>) m.invoke(run);
    } catch (ReflectiveOperationException e) {
      throw new IOException("this Hadoop's DockerRunCommand has no getEnv(): docker GPU mode needs Hadoop 3.3 or newer", e);
    }
  }

  /** A cgroups handler that creates nothing (no root, no cgroup v1 devices controller here). */
  private static CGroupsHandler noCGroups() {
    return (CGroupsHandler) Proxy.newProxyInstance(CGroupsHandler.class.getClassLoader(),
        new Class<?>[] {CGroupsHandler.class}, (proxy, method, args) -> {
          Class<?> r = method.getReturnType();
          if (method.getName().equals("toString")) {
            return "xres-no-cgroups";
          }
          if (r == String.class) {
            // Paths (createCGroup, getPathForCGroupTasks, ...): a name that says what it is.
            return "/xres-minicluster/no-cgroups/" + (args != null && args.length > 1 ? args[1] : "");
          }
          if (r == boolean.class) {
            return false;
          }
          if (r == long.class) {
            return 0L;
          }
          if (r == int.class) {
            return 0;
          }
          return null;
        });
  }
}
