package submit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/am"
	"github.com/xres/xres/yarn/rest"
)

// RESTRM speaks the RM REST API (yarn/rest) behind the same methods as the
// RPC client, for clusters whose RPC port cannot be reached. Limits of the
// REST API: the AM container gets memory and vcores only, and credentials
// are not passed (insecure clusters).
type RESTRM struct {
	c *rest.Client

	mu    sync.Mutex
	types map[string]bool // resource types seen in the RM's answers
}

// NewRESTRM wraps a REST client.
func NewRESTRM(c *rest.Client) *RESTRM { return &RESTRM{c: c, types: map[string]bool{}} }

var _ RM = (*RESTRM)(nil)

// GetNewApplication implements RM.
func (r *RESTRM) GetNewApplication(ctx context.Context) (*hadoopyarn.GetNewApplicationResponseProto, error) {
	na, err := r.c.NewApplication(ctx)
	if err != nil {
		return nil, err
	}
	id, err := yarn.ParseApplicationID(na.ApplicationID)
	if err != nil {
		return nil, fmt.Errorf("new application: %w", err)
	}
	return &hadoopyarn.GetNewApplicationResponseProto{ApplicationId: id, MaximumCapability: r.resourceProto(&na.MaximumResourceCapability)}, nil
}

// resourceProto converts a REST resource, remembering its resource types.
func (r *RESTRM) resourceProto(res *rest.Resource) *hadoopyarn.ResourceProto {
	if res == nil {
		return yarn.NewResource(0, 0, nil)
	}
	extra := map[string]int64{}
	r.mu.Lock()
	r.types["memory-mb"], r.types["vcores"] = true, true
	if res.ResourceInformations != nil {
		for _, ri := range res.ResourceInformations.ResourceInformation {
			r.types[ri.Name] = true
			if ri.Name != "memory-mb" && ri.Name != "vcores" {
				extra[ri.Name] = int64(ri.Value)
			}
		}
	}
	r.mu.Unlock()
	mem, _ := res.Value("memory-mb")
	vcores, _ := res.Value("vcores")
	return yarn.NewResource(mem, int32(vcores), extra)
}

// GetResourceTypeInfo implements RM. REST has no resource-type call: the
// types are those the RM's resources carry (every configured type appears
// in the maximum capability and in each node's total).
func (r *RESTRM) GetResourceTypeInfo(ctx context.Context) ([]*hadoopyarn.ResourceTypeInfoProto, error) {
	nodes, err := r.c.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	for i := range nodes {
		r.resourceProto(nodes[i].TotalResource)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*hadoopyarn.ResourceTypeInfoProto
	for _, name := range slices.Sorted(maps.Keys(r.types)) {
		out = append(out, &hadoopyarn.ResourceTypeInfoProto{Name: proto.String(name)})
	}
	return out, nil
}

// SubmitApplication implements RM.
func (r *RESTRM) SubmitApplication(ctx context.Context, asc *hadoopyarn.ApplicationSubmissionContextProto) error {
	sub, err := RESTSubmission(asc)
	if err != nil {
		return err
	}
	return r.c.Submit(ctx, sub)
}

// RESTSubmission converts a submission context to the REST body.
func RESTSubmission(asc *hadoopyarn.ApplicationSubmissionContextProto) (*rest.ApplicationSubmission, error) {
	spec := asc.GetAmContainerSpec()
	if len(spec.GetTokens()) > 0 {
		return nil, errors.New("rest submission: credentials are not supported; submit over RPC")
	}
	lc := rest.ContainerLaunchContext{Commands: rest.Commands{Command: strings.Join(spec.GetCommand(), " ")}}
	env := map[string]string{}
	for _, e := range spec.GetEnvironment() {
		env[e.GetKey()] = e.GetValue()
	}
	lc.Environment = rest.StringEntries(env)
	if len(spec.GetLocalResources()) > 0 {
		lc.LocalResources = &rest.Entries[rest.LocalResource]{}
		for _, e := range spec.GetLocalResources() {
			v := e.GetValue()
			u := v.GetResource()
			url := am.ResourceURL{Scheme: u.GetScheme(), Host: u.GetHost(), Port: u.GetPort(), File: u.GetFile()}
			lc.LocalResources.Entry = append(lc.LocalResources.Entry, rest.Entry[rest.LocalResource]{Key: e.GetKey(), Value: rest.LocalResource{
				Resource: url.String(), Type: v.GetType().String(), Visibility: v.GetVisibility().String(),
				Size: v.GetSize(), Timestamp: v.GetTimestamp(),
			}})
		}
	}
	return &rest.ApplicationSubmission{
		ApplicationID:   yarn.ApplicationID(asc.GetApplicationId()),
		ApplicationName: asc.GetApplicationName(),
		Queue:           asc.GetQueue(),
		AMContainerSpec: lc,
		MaxAppAttempts:  int(asc.GetMaxAppAttempts()),
		Resource:        &rest.AMResource{Memory: asc.GetResource().GetMemory(), VCores: int64(asc.GetResource().GetVirtualCores())},
		ApplicationType: asc.GetApplicationType(),
	}, nil
}

// GetApplicationReport implements RM.
func (r *RESTRM) GetApplicationReport(ctx context.Context, id *hadoopyarn.ApplicationIdProto) (*hadoopyarn.ApplicationReportProto, error) {
	app, err := r.c.App(ctx, yarn.ApplicationID(id))
	if err != nil {
		return nil, err
	}
	return reportProto(id, app), nil
}

func reportProto(id *hadoopyarn.ApplicationIdProto, app *rest.App) *hadoopyarn.ApplicationReportProto {
	rep := &hadoopyarn.ApplicationReportProto{ApplicationId: id, User: proto.String(app.User), Queue: proto.String(app.Queue),
		Name: proto.String(app.Name), TrackingUrl: proto.String(app.TrackingURL), Diagnostics: proto.String(app.Diagnostics),
		Progress: proto.Float32(float32(app.Progress / 100)), ApplicationType: proto.String(app.ApplicationType)}
	if v, ok := hadoopyarn.YarnApplicationStateProto_value[app.State]; ok {
		rep.YarnApplicationState = hadoopyarn.YarnApplicationStateProto(v).Enum()
	}
	if v, ok := hadoopyarn.FinalApplicationStatusProto_value["APP_"+app.FinalStatus]; ok {
		rep.FinalApplicationStatus = hadoopyarn.FinalApplicationStatusProto(v).Enum()
	}
	return rep
}

// GetApplications lists the applications of the given types and states
// (none: every one), as the RPC client's GetApplications.
func (r *RESTRM) GetApplications(ctx context.Context, types []string, states []string) ([]yarn.ApplicationReport, error) {
	apps, err := r.c.Apps(ctx, rest.AppsFilter{ApplicationTypes: types, States: states})
	if err != nil {
		return nil, err
	}
	out := make([]yarn.ApplicationReport, 0, len(apps))
	for i := range apps {
		out = append(out, applicationReport(&apps[i]))
	}
	return out, nil
}

// applicationReport converts the REST form (progress in percent, times in
// ms since the epoch).
func applicationReport(a *rest.App) yarn.ApplicationReport {
	r := yarn.ApplicationReport{ID: a.ID, Name: a.Name, Type: a.ApplicationType, User: a.User, Queue: a.Queue,
		State: a.State, FinalStatus: a.FinalStatus, Progress: float32(a.Progress / 100), TrackingURL: a.TrackingURL,
		Diagnostics: yarn.CleanDiagnostics(a.Diagnostics)}
	if h, _, ok := strings.Cut(a.AMHostHTTPAddress, ":"); ok {
		r.AMHost = h
	}
	if a.StartedTime > 0 {
		r.StartTime = time.UnixMilli(int64(a.StartedTime))
	}
	if a.FinishedTime > 0 {
		r.FinishTime = time.UnixMilli(int64(a.FinishedTime))
	}
	return r
}

// KillApplication kills an application and waits until the RM reports it
// ended.
func (r *RESTRM) KillApplication(ctx context.Context, id *hadoopyarn.ApplicationIdProto, diagnostics string) error {
	sid := yarn.ApplicationID(id)
	state, err := r.c.Kill(ctx, sid, diagnostics)
	if err != nil {
		return err
	}
	if rest.Terminal(state) {
		return nil
	}
	_, err = r.c.WaitForState(ctx, sid, 200*time.Millisecond, "KILLED", "FINISHED", "FAILED")
	return err
}

// GetClusterNodes lists the NodeManagers (states as NodeStateProto names
// without NS_; none: the RM's default).
func (r *RESTRM) GetClusterNodes(ctx context.Context, states ...hadoopyarn.NodeStateProto) ([]*hadoopyarn.NodeReportProto, error) {
	var names []string
	for _, s := range states {
		names = append(names, strings.TrimPrefix(s.String(), "NS_"))
	}
	nodes, err := r.c.Nodes(ctx, names...)
	if err != nil {
		return nil, err
	}
	var out []*hadoopyarn.NodeReportProto
	for i := range nodes {
		n := &nodes[i]
		host, port, _ := net.SplitHostPort(n.ID)
		p, _ := strconv.Atoi(port)
		nr := &hadoopyarn.NodeReportProto{
			NodeId:      &hadoopyarn.NodeIdProto{Host: proto.String(host), Port: proto.Int32(int32(p))},
			HttpAddress: proto.String(n.NodeHTTPAddress), RackName: proto.String(n.Rack),
			NumContainers: proto.Int32(int32(n.NumContainers)), HealthReport: proto.String(n.HealthReport),
			Used: r.resourceProto(n.UsedResource), Capability: r.resourceProto(n.TotalResource),
		}
		if n.TotalResource == nil {
			nr.Capability = yarn.NewResource(int64(n.UsedMemoryMB+n.AvailMemoryMB), int32(n.UsedVirtualCores+n.AvailableVirtualCores), nil)
		}
		if v, ok := hadoopyarn.NodeStateProto_value["NS_"+n.State]; ok {
			nr.NodeState = hadoopyarn.NodeStateProto(v).Enum()
		}
		out = append(out, nr)
	}
	return out, nil
}
