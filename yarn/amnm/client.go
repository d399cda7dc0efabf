// Package amnm is the ApplicationMaster's side of the NodeManagers: what
// the allocate loop (yarn/am) needs of an NM client (NMClient, and what a
// richer one offers: BatchStarter, EachStarter, StatusChecker), the
// wrappers that give each container its credentials (WithTokens,
// WithContainerKeys) and the tail of a container's log (NMWebLogs).
package amnm

import (
	"context"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/security"
)

// NMClient is what the AM needs from ContainerManagementProtocol, one
// container at a time. nmToken is the newest NMToken the RM sent for the
// container's node (zero Token if none was received).
type NMClient interface {
	StartContainer(ctx context.Context, c yarn.Container, nmToken security.Token, launch yarn.LaunchContext) error
	StopContainer(ctx context.Context, c yarn.Container, nmToken security.Token) error
}

// BatchStarter is an NMClient that starts several containers of one
// NodeManager in one call (startContainers takes a list). The AM then sends
// up to Config.StartBatch of a node's waiting containers at a time. The
// result has one entry per container: nil when it started.
type BatchStarter interface {
	StartContainers(ctx context.Context, cs []yarn.Container, nmToken security.Token, launch yarn.LaunchContext) []error
}

// LogFetcher reads the last lines of one of a container's log files
// ("stderr", "stdout") from its NodeManager (web UI / REST).
type LogFetcher interface {
	Tail(ctx context.Context, c yarn.Container, file string, lines int) ([]string, error)
}

// StatusChecker is an NMClient that reports one container's status
// (getContainerStatuses). *yarn.NMClient is one. With it, a container an
// earlier attempt was granted but recorded no start of is asked about
// before it is trusted as a running worker.
type StatusChecker interface {
	GetContainerStatus(ctx context.Context, c yarn.Container, nmToken security.Token) (yarn.ContainerStatus, error)
}

// The Hadoop RPC NodeManager client is every one of them itself.
var (
	_ NMClient      = (*yarn.NMClient)(nil)
	_ BatchStarter  = (*yarn.NMClient)(nil)
	_ EachStarter   = (*yarn.NMClient)(nil)
	_ StatusChecker = (*yarn.NMClient)(nil)
)

// NewRPCNMClient returns the Hadoop RPC ContainerManagementProtocol client
// as the AM's NMClient (it is one, and a BatchStarter).
func NewRPCNMClient(c *yarn.NMClient) NMClient { return c }
