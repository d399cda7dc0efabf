package io.xres.dsbench;

import java.net.InetAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.hadoop.yarn.api.ApplicationConstants;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.NodeReport;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.UpdatedContainer;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.client.api.async.AMRMClientAsync;
import org.apache.hadoop.yarn.client.api.async.NMClientAsync;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * The Java baseline's ApplicationMaster: WORKERS containers of MEMORY_MB, VCORES and
 * RESOURCES ({@code yarn.io/gpu=1,...}), each running COMMAND under bash, asked and started
 * the way Hadoop's DistributedShell AM does it (AMRMClientAsync heartbeating every second,
 * NMClientAsync). It ends, unregistering, when every container has completed.
 *
 * <p>Usage: {@code AppMaster WORKERS MEMORY_MB VCORES RESOURCES COMMAND}
 */
public final class AppMaster {
  private AppMaster() {}

  public static void main(String[] args) throws Exception {
    int workers = Integer.parseInt(args[0]);
    Resource capability = Resource.newInstance(Integer.parseInt(args[1]), Integer.parseInt(args[2]));
    for (String kv : args[3].split(",")) {
      if (kv.isEmpty()) {
        continue;
      }
      String[] p = kv.split("=", 2);
      capability.setResourceValue(p[0], Long.parseLong(p[1]));
    }
    String command = args[4];
    YarnConfiguration conf = new YarnConfiguration();

    CountDownLatch done = new CountDownLatch(workers);
    AtomicInteger launched = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    NMClientAsync[] nm = new NMClientAsync[1];
    @SuppressWarnings("unchecked")
    AMRMClientAsync<ContainerRequest>[] rm = new AMRMClientAsync[1];

    rm[0] = AMRMClientAsync.createAMRMClientAsync(1000, new AMRMClientAsync.AbstractCallbackHandler() {
      @Override
      public void onContainersAllocated(List<Container> containers) {
        for (Container c : containers) {
          if (launched.incrementAndGet() > workers) {
            rm[0].releaseAssignedContainer(c.getId());
            continue;
          }
          List<? extends java.util.Collection<ContainerRequest>> matching =
              rm[0].getMatchingRequests(c.getPriority(), ResourceName.ANY, c.getResource());
          if (!matching.isEmpty() && !matching.get(0).isEmpty()) {
            rm[0].removeContainerRequest(matching.get(0).iterator().next());
          }
          String log = ApplicationConstants.LOG_DIR_EXPANSION_VAR;
          ContainerLaunchContext ctx = ContainerLaunchContext.newInstance(Map.of(), Map.of(),
              List.of("/bin/bash -c " + Client.quote(command) + " 1>" + log + "/stdout 2>" + log + "/stderr"),
              null, null, null);
          nm[0].startContainerAsync(c, ctx);
        }
      }

      @Override
      public void onContainersCompleted(List<ContainerStatus> statuses) {
        for (ContainerStatus s : statuses) {
          if (s.getExitStatus() != 0) {
            failed.incrementAndGet();
          }
          done.countDown();
        }
      }

      @Override
      public void onContainersUpdated(List<UpdatedContainer> containers) {}

      @Override
      public void onShutdownRequest() {
        while (done.getCount() > 0) {
          done.countDown();
        }
      }

      @Override
      public void onNodesUpdated(List<NodeReport> updated) {}

      @Override
      public float getProgress() {
        return (float) (workers - done.getCount()) / workers;
      }

      @Override
      public void onError(Throwable e) {
        e.printStackTrace();
        failed.incrementAndGet();
        while (done.getCount() > 0) {
          done.countDown();
        }
      }
    });
    nm[0] = NMClientAsync.createNMClientAsync(new NMClientAsync.AbstractCallbackHandler() {
      @Override
      public void onContainerStarted(ContainerId id, Map<String, java.nio.ByteBuffer> data) {}

      @Override
      public void onContainerStatusReceived(ContainerId id, ContainerStatus status) {}

      @Override
      public void onContainerStopped(ContainerId id) {}

      @Override
      public void onStartContainerError(ContainerId id, Throwable t) {
        t.printStackTrace();
        failed.incrementAndGet();
        done.countDown();
      }

      @Override
      public void onContainerResourceIncreased(ContainerId id, Resource r) {}

      @Override
      public void onContainerResourceUpdated(ContainerId id, Resource r) {}

      @Override
      public void onGetContainerStatusError(ContainerId id, Throwable t) {}

      @Override
      public void onIncreaseContainerResourceError(ContainerId id, Throwable t) {}

      @Override
      public void onUpdateContainerResourceError(ContainerId id, Throwable t) {}

      @Override
      public void onStopContainerError(ContainerId id, Throwable t) {}
    });
    rm[0].init(conf);
    rm[0].start();
    nm[0].init(conf);
    nm[0].start();
    rm[0].registerApplicationMaster(InetAddress.getLocalHost().getHostName(), -1, "");
    for (int i = 0; i < workers; i++) {
      rm[0].addContainerRequest(new ContainerRequest(capability, null, null, Priority.newInstance(0)));
    }
    done.await();
    FinalApplicationStatus status = failed.get() == 0 ? FinalApplicationStatus.SUCCEEDED : FinalApplicationStatus.FAILED;
    rm[0].unregisterApplicationMaster(status, failed.get() + " of " + workers + " containers failed", null);
    nm[0].stop();
    rm[0].stop();
  }

  /** ResourceRequest.ANY without importing the whole class for one constant. */
  private static final class ResourceName {
    static final String ANY = org.apache.hadoop.yarn.api.records.ResourceRequest.ANY;
  }
}
