package io.xres.minicluster;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;

/**
 * How the NodeManagers treat yarn.io/gpu (--gpu-mode):
 *
 * <ul>
 *   <li>counted (default): a number per NodeManager (yarn.nodemanager.resource-type.yarn.io/gpu);
 *       YARN schedules the count and never assigns a GPU.
 *   <li>plugin: YARN's GPU resource plugin (yarn.nodemanager.resource-plugins: yarn.io/gpu)
 *       discovers the GPUs with a fake nvidia-smi -x -q, and YARN's GpuResourceHandlerImpl and
 *       GpuResourceAllocator assign GPUs to each container (see {@link XresGpuContainerExecutor});
 *       nothing enforces or announces the assignment (as on a cgroup v2 host).
 *   <li>isolated: plugin, plus the container gets YARN's --excluded_gpus as
 *       XRES_FAKE_GPU_EXCLUDED_MINORS, which the fake nvidia-smi honours as a devices cgroup.
 *   <li>docker: plugin with the Docker runtime: NVIDIA_VISIBLE_DEVICES as YARN's
 *       NvidiaDockerV2CommandPlugin computes it, and XRES_FAKE_DOCKER=1 for the fake.
 *   <li>pluggable: the pluggable device framework's nvidia.com/gpu (YARN's DeviceMappingManager,
 *       DevicePluginAdapter and NvidiaGPUPluginForRuntimeV2, see {@link #PLUGGABLE_CLASS}) with the
 *       Docker runtime: NVIDIA_VISIBLE_DEVICES as that plugin computes it; yarn.io/gpu is 0.
 * </ul>
 *
 * <p>NodeManager i is fake host i: its GPUs have UUIDs of their own (XRES_FAKE_GPU_HOST=i) and
 * the minor numbers of --gpu-minors (index k has the k-th minor number).
 */
final class GpuMode {
  static final List<String> MODES = List.of("counted", "plugin", "isolated", "docker", "pluggable");

  /** The pluggable device framework's GPU resource (NvidiaGPUPluginForRuntimeV2). */
  static final String NVIDIA_GPU = "nvidia.com/gpu";

  /** Our subclass of YARN's NvidiaGPUPluginForRuntimeV2, by name (not compiled for Hadoop 3.1, 3.2). */
  static final String PLUGGABLE_CLASS = "io.xres.minicluster.XresNvidiaGPUPlugin";

  /** Configuration keys our executor reads (set per NodeManager). */
  static final String KEY_MODE = "xres.minicluster.gpu-mode";
  static final String KEY_HOST_ENV = "xres.minicluster.gpu.host-env";
  static final String KEY_CE_DIR = "xres.minicluster.gpu.container-executor-dir";

  final String mode;
  final int gpus;
  final List<Integer> minors;
  final File fakeNvidiaSmi;
  final File dir;

  private GpuMode(String mode, int gpus, List<Integer> minors, File fakeNvidiaSmi, File dir) {
    this.mode = mode;
    this.gpus = gpus;
    this.minors = minors;
    this.fakeNvidiaSmi = fakeNvidiaSmi;
    this.dir = dir;
  }

  /** Checks the options; null in counted mode. */
  static GpuMode parse(Map<String, String> opt, File work) {
    String mode = opt.get("gpu-mode");
    if (!MODES.contains(mode)) {
      throw new IllegalArgumentException("option --gpu-mode=" + mode + ": want one of " + MODES);
    }
    int gpus = Integer.parseInt(opt.get("gpus"));
    String m = opt.get("gpu-minors");
    if (mode.equals("counted")) {
      if (!m.isEmpty()) {
        throw new IllegalArgumentException("option --gpu-minors=" + m + " needs a plugin --gpu-mode (not counted)");
      }
      return null;
    }
    if (gpus < 1) {
      throw new IllegalArgumentException("option --gpu-mode=" + mode + " needs --gpus of at least 1 (YARN's GPU "
          + "plugin fails a NodeManager without GPUs)");
    }
    List<Integer> minors = new ArrayList<>();
    if (m.isEmpty()) {
      // Default: index k has minor 2*((k+1) mod N): never equal to its index for N > 1, and
      // (for N > 1) some minor numbers are no index at all.
      for (int k = 0; k < gpus; k++) {
        minors.add(2 * ((k + 1) % gpus));
      }
    } else {
      for (String s : m.split(",", -1)) {
        try {
          int v = Integer.parseInt(s.trim());
          if (v < 0 || minors.contains(v)) {
            throw new NumberFormatException();
          }
          minors.add(v);
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("option --gpu-minors=" + m + ": '" + s
              + "' is not a distinct non-negative minor number");
        }
      }
      if (minors.size() != gpus) {
        throw new IllegalArgumentException("option --gpu-minors=" + m + " names " + minors.size()
            + " minor numbers but --gpus=" + gpus);
      }
    }
    File fake = new File(opt.get("fake-nvidia-smi")).getAbsoluteFile();
    if (!fake.isFile() || !fake.canExecute()) {
      throw new IllegalArgumentException("option --fake-nvidia-smi=" + fake + ": not an executable file (the fake "
          + "nvidia-smi is driver/gpu/testdata/fake-nvidia-smi in the xres repository)");
    }
    return new GpuMode(mode, gpus, minors, fake, new File(work, "gpu"));
  }

  String minorList() {
    StringBuilder sb = new StringBuilder();
    for (int v : minors) {
      sb.append(sb.length() == 0 ? "" : ",").append(v);
    }
    return sb.toString();
  }

  /** The cluster-wide keys: the GPU plugin, and YARN's own container-executor path (a fake). */
  void configure(Configuration conf) throws IOException {
    Files.createDirectories(dir.toPath());
    if (mode.equals("pluggable")) {
      conf.setBoolean("yarn.nodemanager.pluggable-device-framework.enabled", true);
      conf.set("yarn.nodemanager.pluggable-device-framework.device-classes", PLUGGABLE_CLASS);
      conf.set("yarn.resource-types", conf.get("yarn.resource-types") + "," + NVIDIA_GPU);
      conf.set("yarn.nodemanager.resource-type." + Main.GPU, "0");
    } else {
      conf.set("yarn.nodemanager.resource-plugins", Main.GPU);
    }
    conf.set("yarn.nodemanager.container-executor.class", XresGpuContainerExecutor.class.getName());
    conf.set(KEY_MODE, mode);
    // YARN's PrivilegedOperationExecutor runs this with the arguments a real container-executor
    // gets (--module-gpu --container_id <id> [--excluded_gpus <minors>]); it records them.
    File ceDir = new File(dir, "container-executor");
    Files.createDirectories(ceDir.toPath());
    File ce = new File(dir, "container-executor.sh");
    script(ce, "#!/bin/sh\n"
        + "# Test-only stand-in for YARN's setuid container-executor (xres minicluster, --gpu-mode=" + mode + "):\n"
        + "# records the arguments of YARN's GPU operation instead of writing cgroup v1 device rules.\n"
        + "# Runs with an empty environment (PrivilegedOperationExecutor): shell builtins only.\n"
        + "cid=\n"
        + "for a in \"$@\"; do\n"
        + "  if [ \"$prev\" = --container_id ]; then cid=$a; fi\n"
        + "  prev=$a\n"
        + "done\n"
        + "if [ -z \"$cid\" ]; then echo \"fake container-executor: no --container_id in: $*\" >&2; exit 1; fi\n"
        + "printf '%s\\n' \"$@\" > '" + ceDir.getPath() + "'/\"$cid\"\n");
    conf.set("yarn.nodemanager.linux-container-executor.path", ce.getPath());
    conf.set(KEY_CE_DIR, ceDir.getPath());
    if (mode.equals("docker") || mode.equals("pluggable")) {
      // Every container is a Docker container (the NodeManager's default runtime): YARN's GPU
      // handler then leaves device isolation to Docker, and its Docker plugin sets
      // NVIDIA_VISIBLE_DEVICES.
      conf.set("yarn.nodemanager.runtime.linux.type", "docker");
      conf.set("yarn.nodemanager.runtime.linux.allowed-runtimes", "default,docker");
      conf.set("yarn.nodemanager.resource-plugins.gpu.docker-plugin", "nvidia-docker-v2");
    }
  }

  /** The fake hardware of NodeManager i: what every process on its host sees. */
  Map<String, String> hostEnv(int i) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("XRES_FAKE_GPUS", Integer.toString(gpus));
    env.put("XRES_FAKE_GPU_MINORS", minorList());
    env.put("XRES_FAKE_GPU_HOST", Integer.toString(i));
    return env;
  }

  /**
   * NodeManager i's keys: its discovery executable (a wrapper running the fake nvidia-smi as
   * host i, outside any container) and the host environment its containers get.
   */
  void configureNode(Configuration c, int i) throws IOException {
    File bin = new File(dir, "nm" + i);
    Files.createDirectories(bin.toPath());
    StringBuilder sb = new StringBuilder("#!/bin/sh\n# GPU discovery of NodeManager " + i
        + " (xres minicluster): the fake nvidia-smi as host " + i + ", outside any container.\n"
        + "unset XRES_FAKE_GPU_EXCLUDED_MINORS XRES_FAKE_DOCKER NVIDIA_VISIBLE_DEVICES\n");
    StringBuilder kv = new StringBuilder();
    for (Map.Entry<String, String> e : hostEnv(i).entrySet()) {
      sb.append("export ").append(e.getKey()).append("='").append(e.getValue()).append("'\n");
      kv.append(kv.length() == 0 ? "" : ";").append(e.getKey()).append('=').append(e.getValue());
    }
    sb.append("exec '").append(fakeNvidiaSmi.getPath()).append("' \"$@\"\n");
    script(new File(bin, "nvidia-smi"), sb.toString());
    c.set("yarn.nodemanager.resource-plugins.gpu.path-to-discovery-executables", bin.getPath());
    c.set(KEY_HOST_ENV, kv.toString());
  }

  private static void script(File f, String text) throws IOException {
    Files.writeString(f.toPath(), text, StandardCharsets.UTF_8);
    if (!f.setExecutable(true)) {
      throw new IOException("cannot make " + f + " executable");
    }
  }
}
