package yarn

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/internal/ipc"
	"github.com/xres/xres/yarn/internal/logutil"
	"github.com/xres/xres/yarn/internal/sasl"
	"github.com/xres/xres/yarn/security"
)

// NMConfig configures an NMClient.
type NMConfig struct {
	Log          logrus.FieldLogger
	Dial         DialFunc
	Backoff      Backoff // retries of connection failures to one NodeManager
	PingInterval time.Duration
	IdleTimeout  time.Duration
}

// NMClient is a ContainerManagementProtocol client for any number of
// NodeManagers. Each call names the node (host:port, the container's
// NodeId) and the NMToken the RM issued for it; a connection is kept per
// node and replaced when a newer token is given.
type NMClient struct {
	cfg NMConfig
	log logrus.FieldLogger

	mu    sync.Mutex
	nodes map[string]*nmConn
}

type nmConn struct {
	ep    *endpoints
	ident []byte
}

// ContainerError is a per-container failure reported by a NodeManager
// (not an RPC failure: the other containers of the call may have
// succeeded).
type ContainerError struct {
	Container string // container id
	Class     string // Java exception class
	Message   string
}

func (e *ContainerError) Error() string {
	msg := e.Message
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return fmt.Sprintf("container %s: %s: %s", e.Container, e.Class, msg)
}

// NewNMClient returns an NMClient.
func NewNMClient(cfg NMConfig) *NMClient {
	return &NMClient{cfg: cfg, log: logutil.OrDiscard(cfg.Log), nodes: map[string]*nmConn{}}
}

func (c *NMClient) endpoint(node string, tok *security.Token) (*endpoints, error) {
	if tok == nil || tok.Kind != security.KindNMToken {
		return nil, fmt.Errorf("nodemanager %s: %w: want an %s, got %v", node, ErrNoToken, security.KindNMToken, tok)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if nc, ok := c.nodes[node]; ok {
		if bytes.Equal(nc.ident, tok.Identifier) {
			return nc.ep, nil
		}
		_ = nc.ep.close()
	}
	t := *tok
	mech := func() (sasl.Mechanism, error) {
		u, p := sasl.TokenCredentials(t.Identifier, t.Password)
		return &sasl.DigestMD5{Username: u, Password: p}, nil
	}
	ep, err := newEndpoints([]string{node}, func(addr string) ipc.Config {
		return ipc.Config{Addr: addr, Protocol: ProtocolContainerManagement, Mechanism: mech,
			Dial: ipc.DialFunc(c.cfg.Dial), PingInterval: c.cfg.PingInterval, Log: c.log}
	}, c.cfg.IdleTimeout, c.cfg.Backoff, c.log, nil)
	if err != nil {
		return nil, fmt.Errorf("nodemanager %s: %w", node, err)
	}
	c.nodes[node] = &nmConn{ep: ep, ident: append([]byte{}, tok.Identifier...)}
	return ep, nil
}

// Close closes every NodeManager connection.
func (c *NMClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, nc := range c.nodes {
		_ = nc.ep.close()
		delete(c.nodes, k)
	}
	return nil
}

// ContainerStatus is a NodeManager's report of one container
// (ContainerStatusProto).
type ContainerStatus struct {
	ID          string
	State       string // NEW, RUNNING, COMPLETE (ContainerStateProto without its C_ prefix)
	ExitStatus  int
	Diagnostics string
}

func (c *NMClient) startContainers(ctx context.Context, node string, nmToken security.Token, reqs []*hadoopyarn.StartContainerRequestProto) (*hadoopyarn.StartContainersResponseProto, error) {
	ep, err := c.endpoint(node, nmSecurityToken(nmToken))
	if err != nil {
		return nil, err
	}
	resp := &hadoopyarn.StartContainersResponseProto{}
	if err := ep.call(ctx, "startContainers", &hadoopyarn.StartContainersRequestProto{StartContainerRequest: reqs}, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// StartContainer starts one allocated container with launch; it passes the
// container token from the allocation on. nmToken is the newest NMToken
// the RM sent for the container's node (the zero Token if none was
// received: an error wrapping ErrNoToken). A per-container refusal comes
// back as *ContainerError.
func (c *NMClient) StartContainer(ctx context.Context, ctr Container, nmToken security.Token, launch LaunchContext) error {
	cp, err := containerProto(ctr)
	if err != nil {
		return err
	}
	resp, err := c.startContainers(ctx, NodeID(cp.GetNodeId()), nmToken, []*hadoopyarn.StartContainerRequestProto{{
		ContainerLaunchContext: launchProto(launch), ContainerToken: cp.GetContainerToken(),
	}})
	if err != nil {
		return err
	}
	return firstFailure(resp.GetFailedRequests())
}

// StartContainers starts cs, all on one node, in one startContainers call
// (one launch context shared by every request). The result has one entry
// per container: nil when it started, the container's *ContainerError when
// the NodeManager refused it, the call's error for all when it failed.
func (c *NMClient) StartContainers(ctx context.Context, cs []Container, nmToken security.Token, launch LaunchContext) []error {
	return c.StartContainersEach(ctx, cs, nmToken, launch, nil)
}

// StartContainersEach is StartContainers with each container's own
// credentials: tokens[i] (an HDTS blob) for cs[i] in place of
// launch.Tokens, which the others keep (tokens may be shorter, or nil).
func (c *NMClient) StartContainersEach(ctx context.Context, cs []Container, nmToken security.Token, launch LaunchContext, tokens [][]byte) []error {
	errs := make([]error, len(cs))
	tokensOf := func(i int) []byte {
		if i < len(tokens) && tokens[i] != nil {
			return tokens[i]
		}
		return launch.Tokens
	}
	if len(cs) == 1 {
		l := launch
		l.Tokens = tokensOf(0)
		errs[0] = c.StartContainer(ctx, cs[0], nmToken, l)
		return errs
	}
	if len(cs) == 0 {
		return errs
	}
	lp := launchProto(launch)
	reqs := make([]*hadoopyarn.StartContainerRequestProto, len(cs))
	index := make(map[string]int, len(cs))
	for i, ctr := range cs {
		clp := lp
		if t := tokensOf(i); len(t) > 0 && !bytes.Equal(t, launch.Tokens) {
			// The same launch context but for its credentials (the
			// other fields' values are shared, read-only): every field
			// launchProto sets.
			clp = &hadoopyarn.ContainerLaunchContextProto{Command: lp.Command, LocalResources: lp.LocalResources, Environment: lp.Environment, Tokens: t}
		}
		reqs[i] = &hadoopyarn.StartContainerRequestProto{ContainerLaunchContext: clp, ContainerToken: ctr.Token.Proto()}
		index[ctr.ID] = i
	}
	resp, err := c.startContainers(ctx, cs[0].NodeID, nmToken, reqs)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	for _, f := range resp.GetFailedRequests() {
		id := ContainerID(f.GetContainerId())
		if i, ok := index[id]; ok {
			errs[i] = &ContainerError{Container: id, Class: f.GetException().GetClassName(), Message: f.GetException().GetMessage()}
		}
	}
	return errs
}

// GetContainerStatus returns one container's status.
func (c *NMClient) GetContainerStatus(ctx context.Context, ctr Container, nmToken security.Token) (ContainerStatus, error) {
	cp, err := containerProto(ctr)
	if err != nil {
		return ContainerStatus{}, err
	}
	ep, err := c.endpoint(NodeID(cp.GetNodeId()), nmSecurityToken(nmToken))
	if err != nil {
		return ContainerStatus{}, err
	}
	resp := &hadoopyarn.GetContainerStatusesResponseProto{}
	if err := ep.call(ctx, "getContainerStatuses", &hadoopyarn.GetContainerStatusesRequestProto{ContainerId: []*hadoopyarn.ContainerIdProto{cp.GetId()}}, resp); err != nil {
		return ContainerStatus{}, err
	}
	if err := firstFailure(resp.GetFailedRequests()); err != nil {
		return ContainerStatus{}, err
	}
	for _, s := range resp.GetStatus() {
		return ContainerStatus{ID: ContainerID(s.GetContainerId()), State: strings.TrimPrefix(s.GetState().String(), "C_"),
			ExitStatus: int(s.GetExitStatus()), Diagnostics: s.GetDiagnostics()}, nil
	}
	return ContainerStatus{}, fmt.Errorf("container %s: nodemanager %s returned no status", ctr.ID, NodeID(cp.GetNodeId()))
}

// StopContainer stops one container.
func (c *NMClient) StopContainer(ctx context.Context, ctr Container, nmToken security.Token) error {
	cp, err := containerProto(ctr)
	if err != nil {
		return err
	}
	ep, err := c.endpoint(NodeID(cp.GetNodeId()), nmSecurityToken(nmToken))
	if err != nil {
		return err
	}
	resp := &hadoopyarn.StopContainersResponseProto{}
	if err := ep.call(ctx, "stopContainers", &hadoopyarn.StopContainersRequestProto{ContainerId: []*hadoopyarn.ContainerIdProto{cp.GetId()}}, resp); err != nil {
		return err
	}
	return firstFailure(resp.GetFailedRequests())
}

func firstFailure(f []*hadoopyarn.ContainerExceptionMapProto) error {
	for _, e := range f {
		return &ContainerError{Container: ContainerID(e.GetContainerId()), Class: e.GetException().GetClassName(), Message: e.GetException().GetMessage()}
	}
	return nil
}
