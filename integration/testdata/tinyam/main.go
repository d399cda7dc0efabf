// Command tinyam is the smallest ApplicationMaster the integration tests
// run on the real cluster: it reads its token file, registers with the
// AMRMToken over DIGEST-MD5, checks that an oversized ask is refused, asks
// for two containers with yarn.io/gpu: 1 each, starts `true` in one and
// `sleep 300` in the other with the NMTokens, polls the second's status on
// its NodeManager and stops it, waits for the first to complete with exit
// code 0, and unregisters with SUCCEEDED (FAILED, with the reason as
// diagnostics, on any error).
//
// Settings (environment): TINYAM_SCHEDULER, the RM scheduler address(es),
// comma-separated; HADOOP_TOKEN_FILE_LOCATION and CONTAINER_ID as the
// NodeManager sets them.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/security"
)

func main() {
	log := logrus.New()
	log.SetOutput(os.Stderr)
	log.SetLevel(logrus.DebugLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := run(ctx, log); err != nil {
		log.WithError(err).Error("tinyam failed")
		os.Exit(1)
	}
}

func run(ctx context.Context, log *logrus.Logger) error {
	creds, err := security.ReadTokenFile(os.Getenv("HADOOP_TOKEN_FILE_LOCATION"))
	if err != nil {
		return err
	}
	log.WithField("credentials", creds.String()).Info("read token file")
	tok := creds.Select(security.KindAMRMToken, "")
	if tok == nil {
		return fmt.Errorf("no %s in %s", security.KindAMRMToken, creds)
	}
	addrs := strings.Split(os.Getenv("TINYAM_SCHEDULER"), ",")
	am, err := yarn.NewAMRMClient(yarn.AMConfig{Addrs: addrs, Token: tok, Log: log})
	if err != nil {
		return err
	}
	defer am.Close()
	host, _ := os.Hostname()
	reg := &hadoopyarn.RegisterApplicationMasterResponseProto{}
	err = am.Call(ctx, "registerApplicationMaster", &hadoopyarn.RegisterApplicationMasterRequestProto{Host: proto.String(host), RpcPort: proto.Int32(-1), TrackingUrl: proto.String("")}, reg)
	if err != nil {
		return fmt.Errorf("register: %w", err)
	}
	log.WithField("max", reg.GetMaximumCapability().String()).Info("registered")

	outcome := work(ctx, log, am, reg)
	status := yarn.StatusSucceeded
	diag := "tinyam: ok"
	if outcome.err != nil {
		status = yarn.StatusFailed
		diag = "tinyam: " + outcome.err.Error()
	}
	diag += fmt.Sprintf("; oversized ask: %s; stopped container exit: %d", outcome.oversized, outcome.stopped)
	fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer fcancel()
	if err := am.Finish(fctx, yarn.FinishRequest{Status: status, Diagnostics: diag}); err != nil {
		return fmt.Errorf("finish: %w", err)
	}
	log.WithField("status", status).Info("unregistered")
	return outcome.err
}

type result struct {
	err       error
	oversized string // what the RM said to an ask above the maximum
	stopped   int32  // exit status of the container we stopped
}

func ask(gpus int64, n int32) *hadoopyarn.ResourceRequestProto {
	return &hadoopyarn.ResourceRequestProto{
		Priority:            &hadoopyarn.PriorityProto{Priority: proto.Int32(1)},
		ResourceName:        proto.String("*"),
		Capability:          yarn.NewResource(256, 1, map[string]int64{"yarn.io/gpu": gpus}),
		NumContainers:       proto.Int32(n),
		AllocationRequestId: proto.Int64(1),
	}
}

// rawAM sends allocate through the client's escape hatch (Call), keeping
// the response id itself: tinyam checks fields of the allocated containers
// that yarn's Go types do not carry (priority, execution type).
type rawAM struct {
	c              *yarn.AMRMClient
	lastResponseID int32
}

func (a *rawAM) Allocate(ctx context.Context, req *hadoopyarn.AllocateRequestProto) (*hadoopyarn.AllocateResponseProto, error) {
	req = proto.Clone(req).(*hadoopyarn.AllocateRequestProto)
	req.ResponseId = proto.Int32(a.lastResponseID)
	resp := &hadoopyarn.AllocateResponseProto{}
	if err := a.c.Call(ctx, "allocate", req, resp); err != nil {
		return nil, err
	}
	a.lastResponseID = resp.GetResponseId()
	return resp, nil
}

// rawNM is the NodeManager client's escape hatch (Call) for one container
// at a time; a per-container refusal is an error.
type rawNM struct{ c *yarn.NMClient }

func failed(f []*hadoopyarn.ContainerExceptionMapProto) error {
	for _, e := range f {
		return &yarn.ContainerError{Container: yarn.ContainerID(e.GetContainerId()), Class: e.GetException().GetClassName(), Message: e.GetException().GetMessage()}
	}
	return nil
}

func (n rawNM) StartContainer(ctx context.Context, c *hadoopyarn.ContainerProto, nmToken *security.Token, launch *hadoopyarn.ContainerLaunchContextProto) error {
	resp := &hadoopyarn.StartContainersResponseProto{}
	if err := n.c.Call(ctx, yarn.NodeID(c.GetNodeId()), tokenOf(nmToken), "startContainers", &hadoopyarn.StartContainersRequestProto{
		StartContainerRequest: []*hadoopyarn.StartContainerRequestProto{{ContainerLaunchContext: launch, ContainerToken: c.GetContainerToken()}}}, resp); err != nil {
		return err
	}
	return failed(resp.GetFailedRequests())
}

func (n rawNM) GetContainerStatus(ctx context.Context, c *hadoopyarn.ContainerProto, nmToken *security.Token) (*hadoopyarn.ContainerStatusProto, error) {
	resp := &hadoopyarn.GetContainerStatusesResponseProto{}
	if err := n.c.Call(ctx, yarn.NodeID(c.GetNodeId()), tokenOf(nmToken), "getContainerStatuses", &hadoopyarn.GetContainerStatusesRequestProto{
		ContainerId: []*hadoopyarn.ContainerIdProto{c.GetId()}}, resp); err != nil {
		return nil, err
	}
	if err := failed(resp.GetFailedRequests()); err != nil {
		return nil, err
	}
	for _, st := range resp.GetStatus() {
		return st, nil
	}
	return nil, fmt.Errorf("container %s: nodemanager %s returned no status", yarn.ContainerID(c.GetId()), yarn.NodeID(c.GetNodeId()))
}

func (n rawNM) StopContainer(ctx context.Context, c *hadoopyarn.ContainerProto, nmToken *security.Token) error {
	resp := &hadoopyarn.StopContainersResponseProto{}
	if err := n.c.Call(ctx, yarn.NodeID(c.GetNodeId()), tokenOf(nmToken), "stopContainers", &hadoopyarn.StopContainersRequestProto{
		ContainerId: []*hadoopyarn.ContainerIdProto{c.GetId()}}, resp); err != nil {
		return err
	}
	return failed(resp.GetFailedRequests())
}

// tokenOf is the zero Token for none (the client then refuses the call).
func tokenOf(t *security.Token) security.Token {
	if t == nil {
		return security.Token{}
	}
	return *t
}

func work(ctx context.Context, log *logrus.Logger, client *yarn.AMRMClient, reg *hadoopyarn.RegisterApplicationMasterResponseProto) (res result) {
	am := &rawAM{c: client}
	if !hasResourceType(reg.GetResourceTypes(), "yarn.io/gpu") {
		return result{err: errors.New("resourcemanager does not know yarn.io/gpu")}
	}
	if reg.GetQueue() == "" {
		return result{err: errors.New("register response names no queue")}
	}
	// An ask above the cluster's maximum must be refused with a clear error.
	maxGPU, _ := yarn.ResourceValue(reg.GetMaximumCapability(), "yarn.io/gpu")
	_, err := am.Allocate(ctx, &hadoopyarn.AllocateRequestProto{Ask: []*hadoopyarn.ResourceRequestProto{ask(maxGPU+10, 1)}})
	var re *yarn.RemoteError
	switch {
	case errors.As(err, &re):
		res.oversized = re.Class
	case err != nil:
		return result{err: fmt.Errorf("oversized ask: %w", err)}
	default:
		res.oversized = "accepted"
	}
	log.WithField("answer", res.oversized).Info("oversized ask")

	nmClient := yarn.NewNMClient(yarn.NMConfig{Log: log})
	defer nmClient.Close()
	nm := rawNM{c: nmClient}
	nmTokens := map[string]*security.Token{}
	var got []*hadoopyarn.ContainerProto
	var completed []*hadoopyarn.ContainerStatusProto
	// heartbeat sends one allocate and files what comes back.
	heartbeat := func(req *hadoopyarn.AllocateRequestProto) error {
		resp, err := am.Allocate(ctx, req)
		if err != nil {
			return fmt.Errorf("allocate: %w", err)
		}
		for _, t := range resp.GetNmTokens() {
			nmTokens[yarn.NodeID(t.GetNodeId())] = security.FromProto(t.GetToken())
		}
		got = append(got, resp.GetAllocatedContainers()...)
		completed = append(completed, resp.GetCompletedContainerStatuses()...)
		return nil
	}
	// Two containers with one GPU each: one runs `true`, the other
	// `sleep 300` until we stop it.
	if err := heartbeat(&hadoopyarn.AllocateRequestProto{Ask: []*hadoopyarn.ResourceRequestProto{ask(1, 2)}}); err != nil {
		res.err = err
		return res
	}
	for len(got) < 2 {
		if err := sleep(ctx, 300*time.Millisecond); err != nil {
			res.err = err
			return res
		}
		if err := heartbeat(&hadoopyarn.AllocateRequestProto{Progress: proto.Float32(0.1)}); err != nil {
			res.err = err
			return res
		}
	}
	short, long := got[0], got[1]
	for _, c := range got[:2] {
		gpus, _ := yarn.ResourceValue(c.GetResource(), "yarn.io/gpu")
		log.WithFields(logrus.Fields{"container": yarn.ContainerID(c.GetId()), "node": yarn.NodeID(c.GetNodeId()), "gpus": gpus}).Info("allocated")
		if gpus != 1 {
			res.err = fmt.Errorf("container %s has %d yarn.io/gpu, want 1", yarn.ContainerID(c.GetId()), gpus)
			return res
		}
		// Fields read with our field numbers carry what we asked for.
		switch {
		case c.GetAllocationRequestId() != 1:
			res.err = fmt.Errorf("container %s: allocation_request_id %d, want 1", yarn.ContainerID(c.GetId()), c.GetAllocationRequestId())
		case c.GetPriority().GetPriority() != 1:
			res.err = fmt.Errorf("container %s: priority %d, want 1", yarn.ContainerID(c.GetId()), c.GetPriority().GetPriority())
		case c.GetNodeHttpAddress() == "" || c.GetContainerToken() == nil:
			res.err = fmt.Errorf("container %s: no node http address or container token", yarn.ContainerID(c.GetId()))
		case c.GetExecutionType() != hadoopyarn.ExecutionTypeProto_GUARANTEED:
			res.err = fmt.Errorf("container %s: execution type %s", yarn.ContainerID(c.GetId()), c.GetExecutionType())
		}
		if res.err != nil {
			return res
		}
	}
	start := func(c *hadoopyarn.ContainerProto, cmd string) error {
		launch := &hadoopyarn.ContainerLaunchContextProto{Command: []string{cmd, "1><LOG_DIR>/stdout", "2><LOG_DIR>/stderr"}}
		if err := nm.StartContainer(ctx, c, nmTokens[yarn.NodeID(c.GetNodeId())], launch); err != nil {
			return fmt.Errorf("start container on %s: %w", yarn.NodeID(c.GetNodeId()), err)
		}
		return nil
	}
	if err := start(short, "true"); err != nil {
		res.err = err
		return res
	}
	if err := start(long, "sleep 300"); err != nil {
		res.err = err
		return res
	}
	log.Info("started both")
	// Ask the NodeManager directly until the long one runs, then stop it.
	for {
		st, err := nm.GetContainerStatus(ctx, long, nmTokens[yarn.NodeID(long.GetNodeId())])
		if err != nil {
			res.err = fmt.Errorf("container status: %w", err)
			return res
		}
		if st.GetState() == hadoopyarn.ContainerStateProto_C_RUNNING {
			break
		}
		if st.GetState() == hadoopyarn.ContainerStateProto_C_COMPLETE {
			res.err = fmt.Errorf("sleeping container completed early: exit %d: %s", st.GetExitStatus(), st.GetDiagnostics())
			return res
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			res.err = err
			return res
		}
	}
	if err := nm.StopContainer(ctx, long, nmTokens[yarn.NodeID(long.GetNodeId())]); err != nil {
		res.err = fmt.Errorf("stop container: %w", err)
		return res
	}
	log.Info("stopped the sleeping container")
	exits := map[string]int32{}
	for len(exits) < 2 {
		for _, st := range completed {
			exits[yarn.ContainerID(st.GetContainerId())] = st.GetExitStatus()
			log.WithFields(logrus.Fields{"container": yarn.ContainerID(st.GetContainerId()), "exit": st.GetExitStatus(), "diagnostics": st.GetDiagnostics()}).Info("container completed")
		}
		completed = nil
		if len(exits) >= 2 {
			break
		}
		if err := sleep(ctx, 300*time.Millisecond); err != nil {
			res.err = err
			return res
		}
		if err := heartbeat(&hadoopyarn.AllocateRequestProto{Progress: proto.Float32(0.5)}); err != nil {
			res.err = err
			return res
		}
	}
	res.stopped = exits[yarn.ContainerID(long.GetId())]
	if e := exits[yarn.ContainerID(short.GetId())]; e != 0 {
		res.err = fmt.Errorf("container %s exited with %d, want 0", yarn.ContainerID(short.GetId()), e)
	}
	return res
}

func hasResourceType(types []*hadoopyarn.ResourceTypeInfoProto, name string) bool {
	for _, t := range types {
		if t.GetName() == name {
			return true
		}
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
