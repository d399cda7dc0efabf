package io.xres.minicluster;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.hadoop.conf.Configurable;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.server.nodemanager.api.deviceplugin.Device;
import org.apache.hadoop.yarn.server.nodemanager.api.deviceplugin.DeviceRegisterRequest;
import org.apache.hadoop.yarn.server.nodemanager.api.deviceplugin.DeviceRuntimeSpec;
import org.apache.hadoop.yarn.server.nodemanager.api.deviceplugin.YarnRuntimeType;
import org.apache.hadoop.yarn.server.nodemanager.containermanager.resourceplugin.com.nvidia.NvidiaGPUPluginForRuntimeV2;

/**
 * TEST ONLY (--gpu-mode=pluggable). YARN's NvidiaGPUPluginForRuntimeV2 (resource nvidia.com/gpu
 * of the pluggable device framework) on the fake GPUs: all of its code runs (getDevices parses
 * {@code nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader}, onDevicesAllocated builds
 * the Docker runtime's NVIDIA_VISIBLE_DEVICES, its topology scheduler picks devices) except two
 * host look-ups: the nvidia-smi it runs is this NodeManager's fake (as NVIDIA_SMI_PATH would name
 * it), and {@code stat -c %t:%T /dev/nvidia<N>} is answered from the fake host's minor numbers:
 * /dev/nvidia<N> exists when a GPU has minor number N (major 195, as the NVIDIA driver's), and
 * is missing otherwise, as on a real host. The NodeManager builds it with its configuration
 * (ReflectionUtils.newInstance calls setConf).
 *
 * <p>Compiled for Hadoop 3.3 and newer only (the pom excludes it for 3.1 and 3.2, which have no
 * pluggable device framework); {@link GpuMode} names it by string.
 */
public class XresNvidiaGPUPlugin extends NvidiaGPUPluginForRuntimeV2 implements Configurable {
  private Configuration conf;
  private final List<Integer> minors = new ArrayList<>();

  @Override
  public void setConf(Configuration c) {
    conf = c;
    String dir = c.get("yarn.nodemanager.resource-plugins.gpu.path-to-discovery-executables", "");
    setPathOfGpuBinary(new File(dir, "nvidia-smi").getPath());
    for (String kv : c.get(GpuMode.KEY_HOST_ENV, "").split(";")) {
      if (kv.startsWith("XRES_FAKE_GPU_MINORS=")) {
        for (String m : kv.substring("XRES_FAKE_GPU_MINORS=".length()).split(",")) {
          minors.add(Integer.parseInt(m.trim()));
        }
      }
    }
    setShellExecutor(new NvidiaCommandExecutor() {
      @Override
      public String getMajorMinorInfo(String devName) throws IOException {
        // devName is "nvidia<N>"; stat prints major:minor in hex.
        int n;
        try {
          n = Integer.parseInt(devName.replaceFirst("^nvidia", ""));
        } catch (NumberFormatException e) {
          throw new IOException("stat: cannot stat '/dev/" + devName + "': No such file or directory");
        }
        if (!minors.contains(n)) {
          throw new IOException("stat: cannot stat '/dev/" + devName + "': No such file or directory (fake host's minor numbers: "
              + minors + ")");
        }
        return Integer.toHexString(195) + ":" + Integer.toHexString(n) + "\n";
      }
    });
  }

  // YARN's ResourcePluginManager.checkInterfaceCompatibility wants the DevicePlugin methods
  // declared by the configured class itself: each is YARN's, unchanged.

  @Override
  public DeviceRegisterRequest getRegisterRequestInfo() throws Exception {
    return super.getRegisterRequestInfo();
  }

  @Override
  public Set<Device> getDevices() throws Exception {
    return super.getDevices();
  }

  @Override
  public DeviceRuntimeSpec onDevicesAllocated(Set<Device> allocated, YarnRuntimeType runtime) throws Exception {
    return super.onDevicesAllocated(allocated, runtime);
  }

  @Override
  public void onDevicesReleased(Set<Device> released) throws Exception {
    super.onDevicesReleased(released);
  }

  @Override
  public Set<Device> allocateDevices(Set<Device> available, int count, Map<String, String> env) {
    return super.allocateDevices(available, count, env);
  }

  @Override
  public Configuration getConf() {
    return conf;
  }
}
