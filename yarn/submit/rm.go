package submit

import (
	"context"

	"github.com/xres/xres/yarn"
)

// RM is what submission needs from the ResourceManager, in yarn's own
// types whether it is reached over Hadoop RPC (NewRPCRM) or REST
// (yarn/rest.NewRM): the protos stay behind the RPC client's boundary.
type RM interface {
	NewApplication(ctx context.Context) (yarn.NewApplication, error)
	ResourceTypes(ctx context.Context) ([]yarn.ResourceType, error)
	Submit(ctx context.Context, sub yarn.Submission) error
	ApplicationReport(ctx context.Context, appID string) (yarn.ApplicationReport, error)
}

// ClusterRM is RM and what am's other commands (status, list, kill,
// cluster) need.
type ClusterRM interface {
	RM
	// Kill kills the application and waits until the RM reports it ended.
	Kill(ctx context.Context, appID, diagnostics string) error
	// Nodes lists the NodeManagers in the given states (RUNNING, LOST, …;
	// none: the RM's default).
	Nodes(ctx context.Context, states ...string) ([]yarn.NodeReport, error)
	// Applications lists the applications of the given types and states
	// (none: every one).
	Applications(ctx context.Context, types, states []string) ([]yarn.ApplicationReport, error)
}

var _ ClusterRM = rpcRM{}

// NewRPCRM returns the Hadoop RPC client as a ClusterRM. The client speaks
// yarn's types itself: the adapter only renames its calls.
func NewRPCRM(c *yarn.Client) ClusterRM { return rpcRM{c: c} }

type rpcRM struct{ c *yarn.Client }

func (r rpcRM) NewApplication(ctx context.Context) (yarn.NewApplication, error) {
	return r.c.GetNewApplication(ctx)
}

func (r rpcRM) ResourceTypes(ctx context.Context) ([]yarn.ResourceType, error) {
	return r.c.GetResourceTypeInfo(ctx)
}

func (r rpcRM) Submit(ctx context.Context, sub yarn.Submission) error {
	return r.c.SubmitApplication(ctx, sub)
}

func (r rpcRM) ApplicationReport(ctx context.Context, appID string) (yarn.ApplicationReport, error) {
	return r.c.GetApplicationReport(ctx, appID)
}

func (r rpcRM) Kill(ctx context.Context, appID, diagnostics string) error {
	return r.c.KillApplication(ctx, appID, diagnostics)
}

func (r rpcRM) Nodes(ctx context.Context, states ...string) ([]yarn.NodeReport, error) {
	return r.c.GetClusterNodes(ctx, states...)
}

func (r rpcRM) Applications(ctx context.Context, types, states []string) ([]yarn.ApplicationReport, error) {
	return r.c.GetApplications(ctx, types, states...)
}
