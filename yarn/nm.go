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

// StartContainers starts containers on node.
func (c *NMClient) StartContainers(ctx context.Context, node string, nmToken *security.Token, reqs []*hadoopyarn.StartContainerRequestProto) (*hadoopyarn.StartContainersResponseProto, error) {
	ep, err := c.endpoint(node, nmToken)
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
// container token from the allocation on. A per-container refusal comes
// back as *ContainerError.
func (c *NMClient) StartContainer(ctx context.Context, container *hadoopyarn.ContainerProto, nmToken *security.Token, launch *hadoopyarn.ContainerLaunchContextProto) error {
	resp, err := c.StartContainers(ctx, NodeID(container.GetNodeId()), nmToken, []*hadoopyarn.StartContainerRequestProto{{
		ContainerLaunchContext: launch, ContainerToken: container.GetContainerToken(),
	}})
	if err != nil {
		return err
	}
	return firstFailure(resp.GetFailedRequests())
}

// GetContainerStatuses asks node for the state of containers.
func (c *NMClient) GetContainerStatuses(ctx context.Context, node string, nmToken *security.Token, ids []*hadoopyarn.ContainerIdProto) (*hadoopyarn.GetContainerStatusesResponseProto, error) {
	ep, err := c.endpoint(node, nmToken)
	if err != nil {
		return nil, err
	}
	resp := &hadoopyarn.GetContainerStatusesResponseProto{}
	if err := ep.call(ctx, "getContainerStatuses", &hadoopyarn.GetContainerStatusesRequestProto{ContainerId: ids}, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// GetContainerStatus returns one container's status.
func (c *NMClient) GetContainerStatus(ctx context.Context, container *hadoopyarn.ContainerProto, nmToken *security.Token) (*hadoopyarn.ContainerStatusProto, error) {
	resp, err := c.GetContainerStatuses(ctx, NodeID(container.GetNodeId()), nmToken, []*hadoopyarn.ContainerIdProto{container.GetId()})
	if err != nil {
		return nil, err
	}
	if err := firstFailure(resp.GetFailedRequests()); err != nil {
		return nil, err
	}
	for _, s := range resp.GetStatus() {
		return s, nil
	}
	return nil, fmt.Errorf("container %s: nodemanager %s returned no status", ContainerID(container.GetId()), NodeID(container.GetNodeId()))
}

// StopContainers stops containers on node.
func (c *NMClient) StopContainers(ctx context.Context, node string, nmToken *security.Token, ids []*hadoopyarn.ContainerIdProto) (*hadoopyarn.StopContainersResponseProto, error) {
	ep, err := c.endpoint(node, nmToken)
	if err != nil {
		return nil, err
	}
	resp := &hadoopyarn.StopContainersResponseProto{}
	if err := ep.call(ctx, "stopContainers", &hadoopyarn.StopContainersRequestProto{ContainerId: ids}, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// StopContainer stops one container.
func (c *NMClient) StopContainer(ctx context.Context, container *hadoopyarn.ContainerProto, nmToken *security.Token) error {
	resp, err := c.StopContainers(ctx, NodeID(container.GetNodeId()), nmToken, []*hadoopyarn.ContainerIdProto{container.GetId()})
	if err != nil {
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
