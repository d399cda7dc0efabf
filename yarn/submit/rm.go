package submit

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/am"
)

// RM is what submission needs from the ResourceManager, in yarn's own
// types whether it is reached over Hadoop RPC (NewRPCRM) or REST
// (NewRESTRM): the protos stay behind the RPC adapter.
type RM interface {
	NewApplication(ctx context.Context) (yarn.NewApplication, error)
	ResourceTypes(ctx context.Context) ([]yarn.ResourceType, error)
	Submit(ctx context.Context, sub Submission) error
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

// Submission is one application for the RM to start: its AM container.
type Submission struct {
	AppID       string // from NewApplication
	Name        string
	Queue       string
	Type        string // applicationType
	AMResource  yarn.Resource
	MaxAttempts int32 // 0: the cluster's yarn.resourcemanager.am.max-attempts
	AM          yarn.LaunchContext
	// NodeLabel is the application's node label expression (Flink's
	// yarn.application.node-label): the AM container's, and the workers'
	// where their ask names none. "": the queue's default.
	NodeLabel string
	Tags      []string // applicationTags (yarn.tags)
	Priority  *int32   // yarn.application.priority; nil: the queue's default
}

// rpcClient is the part of the ApplicationClientProtocol client
// (*yarn.Client) the RPC adapter uses.
type rpcClient interface {
	GetNewApplication(ctx context.Context) (*hadoopyarn.GetNewApplicationResponseProto, error)
	GetResourceTypeInfo(ctx context.Context) ([]*hadoopyarn.ResourceTypeInfoProto, error)
	SubmitApplication(ctx context.Context, asc *hadoopyarn.ApplicationSubmissionContextProto) error
	GetApplicationReport(ctx context.Context, id *hadoopyarn.ApplicationIdProto) (*hadoopyarn.ApplicationReportProto, error)
	KillApplication(ctx context.Context, id *hadoopyarn.ApplicationIdProto, diagnostics string) error
	GetClusterNodes(ctx context.Context, states ...hadoopyarn.NodeStateProto) ([]*hadoopyarn.NodeReportProto, error)
	GetApplications(ctx context.Context, types []string, states ...hadoopyarn.YarnApplicationStateProto) ([]*hadoopyarn.ApplicationReportProto, error)
}

var (
	_ rpcClient = (*yarn.Client)(nil)
	_ ClusterRM = rpcRM{}
)

// NewRPCRM adapts the Hadoop RPC client to ClusterRM.
func NewRPCRM(c *yarn.Client) ClusterRM { return rpcRM{c: c} }

type rpcRM struct{ c rpcClient }

func (r rpcRM) NewApplication(ctx context.Context) (yarn.NewApplication, error) {
	resp, err := r.c.GetNewApplication(ctx)
	if err != nil {
		return yarn.NewApplication{}, err
	}
	return yarn.NewApplication{ID: yarn.ApplicationID(resp.GetApplicationId()), MaxCapability: yarn.ResourceFromProto(resp.GetMaximumCapability())}, nil
}

func (r rpcRM) ResourceTypes(ctx context.Context) ([]yarn.ResourceType, error) {
	types, err := r.c.GetResourceTypeInfo(ctx)
	if err != nil {
		return nil, err
	}
	return yarn.ResourceTypesFromProto(types), nil
}

func (r rpcRM) Submit(ctx context.Context, sub Submission) error {
	asc, err := submissionProto(sub)
	if err != nil {
		return err
	}
	return r.c.SubmitApplication(ctx, asc)
}

// submissionProto is the RPC form of sub.
func submissionProto(sub Submission) (*hadoopyarn.ApplicationSubmissionContextProto, error) {
	id, err := yarn.ParseApplicationID(sub.AppID)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	asc := &hadoopyarn.ApplicationSubmissionContextProto{
		ApplicationId:   id,
		ApplicationName: proto.String(sub.Name),
		Queue:           proto.String(sub.Queue),
		AmContainerSpec: am.LaunchProto(sub.AM),
		Resource:        yarn.NewResource(sub.AMResource.MemoryMB, int32(sub.AMResource.VCores), sub.AMResource.Extra),
		ApplicationType: proto.String(sub.Type),
		// As Flink does: a new AM attempt adopts the running workers
		// (containers_from_previous_attempts) instead of losing them.
		KeepContainersAcrossApplicationAttempts: proto.Bool(true),
	}
	if sub.MaxAttempts > 0 {
		asc.MaxAppAttempts = proto.Int32(sub.MaxAttempts)
	}
	if sub.NodeLabel != "" {
		asc.NodeLabelExpression = proto.String(sub.NodeLabel)
	}
	asc.ApplicationTags = sub.Tags
	if sub.Priority != nil {
		asc.Priority = &hadoopyarn.PriorityProto{Priority: proto.Int32(*sub.Priority)}
	}
	return asc, nil
}

func (r rpcRM) ApplicationReport(ctx context.Context, appID string) (yarn.ApplicationReport, error) {
	id, err := yarn.ParseApplicationID(appID)
	if err != nil {
		return yarn.ApplicationReport{}, err
	}
	rep, err := r.c.GetApplicationReport(ctx, id)
	if err != nil {
		return yarn.ApplicationReport{}, err
	}
	return yarn.ApplicationReportFromProto(rep), nil
}

func (r rpcRM) Kill(ctx context.Context, appID, diagnostics string) error {
	id, err := yarn.ParseApplicationID(appID)
	if err != nil {
		return err
	}
	return r.c.KillApplication(ctx, id, diagnostics)
}

func (r rpcRM) Nodes(ctx context.Context, states ...string) ([]yarn.NodeReport, error) {
	ps := make([]hadoopyarn.NodeStateProto, 0, len(states))
	for _, s := range states {
		v, ok := hadoopyarn.NodeStateProto_value["NS_"+s]
		if !ok {
			return nil, fmt.Errorf("list nodes: unknown node state %q", s)
		}
		ps = append(ps, hadoopyarn.NodeStateProto(v))
	}
	nodes, err := r.c.GetClusterNodes(ctx, ps...)
	if err != nil {
		return nil, err
	}
	out := make([]yarn.NodeReport, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, yarn.NodeReportFromProto(n))
	}
	return out, nil
}

func (r rpcRM) Applications(ctx context.Context, types, states []string) ([]yarn.ApplicationReport, error) {
	ps := make([]hadoopyarn.YarnApplicationStateProto, 0, len(states))
	for _, s := range states {
		v, ok := hadoopyarn.YarnApplicationStateProto_value[s]
		if !ok {
			return nil, fmt.Errorf("list applications: unknown application state %q", s)
		}
		ps = append(ps, hadoopyarn.YarnApplicationStateProto(v))
	}
	apps, err := r.c.GetApplications(ctx, types, ps...)
	if err != nil {
		return nil, err
	}
	out := make([]yarn.ApplicationReport, 0, len(apps))
	for _, a := range apps {
		out = append(out, yarn.ApplicationReportFromProto(a))
	}
	return out, nil
}
