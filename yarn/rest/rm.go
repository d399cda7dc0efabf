package rest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/security"
)

// RM is the REST client in yarn's Go types, the ones the RPC client
// (*yarn.Client) returns: what submission needs (yarn/submit's ClusterRM)
// for clusters whose RPC port cannot be reached, converted from the REST
// JSON directly. Limits of the REST API:
// the AM container gets memory and vcores only, and of the credentials
// only secret keys are passed (the report secret; tokens: insecure
// clusters only).
type RM struct {
	c *Client

	mu    sync.Mutex
	types map[string]bool // resource types seen in the RM's answers
}

// NewRM wraps a REST client.
func NewRM(c *Client) *RM { return &RM{c: c, types: map[string]bool{}} }

// NewApplication implements yarn/submit.RM.
func (r *RM) NewApplication(ctx context.Context) (yarn.NewApplication, error) {
	na, err := r.c.NewApplication(ctx)
	if err != nil {
		return yarn.NewApplication{}, err
	}
	return yarn.NewApplication{ID: na.ApplicationID, MaxCapability: r.resource(&na.MaximumResourceCapability)}, nil
}

// resource converts a REST resource, remembering its resource types.
func (r *RM) resource(res *Resource) yarn.Resource {
	if res == nil {
		return yarn.Resource{}
	}
	var extra map[string]int64
	r.mu.Lock()
	r.types["memory-mb"], r.types["vcores"] = true, true
	if res.ResourceInformations != nil {
		for _, ri := range res.ResourceInformations.ResourceInformation {
			r.types[ri.Name] = true
			if ri.Name != "memory-mb" && ri.Name != "vcores" {
				if extra == nil {
					extra = map[string]int64{}
				}
				extra[ri.Name] = int64(ri.Value)
			}
		}
	}
	r.mu.Unlock()
	mem, _ := res.Value("memory-mb")
	vcores, _ := res.Value("vcores")
	return yarn.Resource{MemoryMB: mem, VCores: vcores, Extra: extra}
}

// ResourceTypes implements yarn/submit.RM. REST has no resource-type call: the types
// are those the RM's resources carry (every configured type appears in the
// maximum capability and in each node's total).
func (r *RM) ResourceTypes(ctx context.Context) ([]yarn.ResourceType, error) {
	nodes, err := r.c.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	for i := range nodes {
		r.nodeCapability(&nodes[i])
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []yarn.ResourceType
	for _, name := range slices.Sorted(maps.Keys(r.types)) {
		out = append(out, yarn.ResourceType{Name: name})
	}
	return out, nil
}

// Submit implements yarn/submit.RM.
func (r *RM) Submit(ctx context.Context, sub yarn.Submission) error {
	body, err := NewSubmission(sub)
	if err != nil {
		return err
	}
	return r.c.Submit(ctx, body)
}

// REST names of the local resource types and visibilities.
var (
	restResourceTypes = map[yarn.LocalResourceType]string{yarn.Archive: "ARCHIVE", yarn.File: "FILE", yarn.Pattern: "PATTERN"}
	restVisibilities  = map[yarn.Visibility]string{yarn.Public: "PUBLIC", yarn.Private: "PRIVATE", yarn.Application: "APPLICATION"}
)

// NewSubmission converts a submission to the REST body.
func NewSubmission(sub yarn.Submission) (*ApplicationSubmission, error) {
	creds, err := restCredentials(sub.AM.Tokens)
	if err != nil {
		return nil, err
	}
	lc := ContainerLaunchContext{Commands: Commands{Command: strings.Join(sub.AM.Commands, " ")},
		Environment: StringEntries(sub.AM.Env), Credentials: creds}
	if len(sub.AM.LocalResources) > 0 {
		lc.LocalResources = &Entries[LocalResource]{}
		for _, name := range slices.Sorted(maps.Keys(sub.AM.LocalResources)) {
			v := sub.AM.LocalResources[name]
			lc.LocalResources.Entry = append(lc.LocalResources.Entry, Entry[LocalResource]{Key: name, Value: LocalResource{
				Resource: v.URL.String(), Type: restResourceTypes[v.Type], Visibility: restVisibilities[v.Visibility],
				Size: v.Size, Timestamp: v.Timestamp,
			}})
		}
	}
	var prio int
	if sub.Priority != nil {
		prio = int(*sub.Priority)
	}
	return &ApplicationSubmission{
		ApplicationID:   sub.AppID,
		Priority:        prio,
		ApplicationName: sub.Name,
		Queue:           sub.Queue,
		AMContainerSpec: lc,
		MaxAppAttempts:  int(sub.MaxAttempts),
		// As over RPC (yarn.SubmissionProto): a new AM attempt keeps the workers.
		KeepContainersAcrossAttempts: true,
		Resource:                     &AMResource{Memory: sub.AMResource.MemoryMB, VCores: sub.AMResource.VCores},
		ApplicationType:              sub.Type,
		AppNodeLabelExpression:       sub.NodeLabel,
		ApplicationTags:              restTags(sub.Tags),
	}, nil
}

// restCredentials converts the AM's credentials (token storage format) to
// the REST form: the secret keys base64-encoded (the RM decodes them with
// commons-codec's Base64, either alphabet). Tokens (a Kerberized
// submission's delegation tokens) are refused: submit those over RPC.
func restCredentials(tokens []byte) (*Credentials, error) {
	if len(tokens) == 0 {
		return nil, nil
	}
	c, err := security.ParseCredentials(tokens)
	if err != nil {
		return nil, fmt.Errorf("rest submission: %w", err)
	}
	if len(c.Aliases()) > 0 {
		return nil, errors.New("rest submission: credentials with tokens are not supported; submit over RPC")
	}
	secrets := map[string]string{}
	for _, alias := range c.SecretAliases() {
		secrets[alias] = base64.StdEncoding.EncodeToString(c.Secret(alias))
	}
	if len(secrets) == 0 {
		return nil, nil
	}
	return &Credentials{Secrets: StringEntries(secrets)}, nil
}

func restTags(tags []string) *Tags {
	if len(tags) == 0 {
		return nil
	}
	return &Tags{Tag: tags}
}

// ApplicationReport implements yarn/submit.RM.
func (r *RM) ApplicationReport(ctx context.Context, appID string) (yarn.ApplicationReport, error) {
	app, err := r.c.App(ctx, appID)
	if err != nil {
		return yarn.ApplicationReport{}, err
	}
	return applicationReport(app), nil
}

// Applications implements yarn/submit.ClusterRM.
func (r *RM) Applications(ctx context.Context, types, states []string) ([]yarn.ApplicationReport, error) {
	apps, err := r.c.Apps(ctx, AppsFilter{ApplicationTypes: types, States: states})
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
func applicationReport(a *App) yarn.ApplicationReport {
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

// Kill implements yarn/submit.ClusterRM: it waits until the RM reports the application
// ended.
func (r *RM) Kill(ctx context.Context, appID, diagnostics string) error {
	state, err := r.c.Kill(ctx, appID, diagnostics)
	if err != nil {
		return err
	}
	if yarn.AppStateEnded(state) {
		return nil
	}
	_, err = r.c.WaitForState(ctx, appID, 200*time.Millisecond, "KILLED", "FINISHED", "FAILED")
	return err
}

// Nodes implements yarn/submit.ClusterRM.
func (r *RM) Nodes(ctx context.Context, states ...string) ([]yarn.NodeReport, error) {
	nodes, err := r.c.Nodes(ctx, states...)
	if err != nil {
		return nil, err
	}
	out := make([]yarn.NodeReport, 0, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		nr := yarn.NodeReport{ID: n.ID, HTTPAddress: n.NodeHTTPAddress, Rack: n.Rack, State: n.State,
			Containers: int(n.NumContainers), Health: n.HealthReport,
			Used: r.resource(n.UsedResource), Capability: r.nodeCapability(n)}
		out = append(out, nr)
	}
	return out, nil
}

// nodeCapability is a node's capacity of every resource type: its totalResource
// where the RM sends one (Hadoop 3.3 and newer), else used plus available,
// type by type: 3.1 and 3.2 send no totalResource, but their usedResource and
// availableResource carry every resource type (GPUs included); memory and
// vcores then come from the flat usedMemoryMB/availMemoryMB and
// usedVirtualCores/availableVirtualCores fields, which every 3.x sends.
func (r *RM) nodeCapability(n *Node) yarn.Resource {
	if n.TotalResource != nil {
		return r.resource(n.TotalResource)
	}
	out := yarn.Resource{MemoryMB: int64(n.UsedMemoryMB + n.AvailMemoryMB), VCores: int64(n.UsedVirtualCores + n.AvailableVirtualCores)}
	for _, part := range []*Resource{n.UsedResource, n.AvailableResource} {
		for k, v := range r.resource(part).Extra {
			if out.Extra == nil {
				out.Extra = map[string]int64{}
			}
			out.Extra[k] += v
		}
	}
	return out
}
