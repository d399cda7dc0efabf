package yarn

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/internal/ipc"
	"github.com/xres/xres/yarn/internal/logutil"
	"github.com/xres/xres/yarn/internal/sasl"
)

// Java protocol names (the *PB interfaces), version 1 each.
const (
	ProtocolApplicationClient   = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
	ProtocolApplicationMaster   = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"
	ProtocolContainerManagement = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB"
)

// ClientConfig configures a Client.
type ClientConfig struct {
	// Addrs are the ResourceManager client addresses (yarn.resourcemanager.address,
	// one per rm-id under HA; see RMAddresses).
	Addrs []string
	// User is the user for SIMPLE authentication; "" uses $HADOOP_USER_NAME,
	// then the OS user.
	User string
	// Kerberos, when set, authenticates with KERBEROS (GSSAPI) instead of
	// SIMPLE.
	Kerberos *Kerberos
	// Log receives failover notices and debug records; nil discards them.
	Log logrus.FieldLogger
	// Dial opens connections; nil uses net.Dialer.
	Dial DialFunc
	// Backoff bounds failover retries.
	Backoff Backoff
	// PingInterval: ping while a call waits this long (default 60 s).
	PingInterval time.Duration
	// IdleTimeout: redial after a connection sat idle this long (default 10 s).
	IdleTimeout time.Duration
}

// Client is an ApplicationClientProtocol client: what `yarn application`
// and a submission client use. Safe for concurrent use.
type Client struct {
	ep *endpoints
}

// NewClient returns a Client; it connects on the first call.
func NewClient(cfg ClientConfig) (*Client, error) {
	userName := cfg.User
	if userName == "" {
		userName = CurrentUser(os.Getenv)
	}
	if cfg.Kerberos != nil {
		userName = cfg.Kerberos.principal()
	}
	log := logutil.OrDiscard(cfg.Log)
	ep, err := newEndpoints(cfg.Addrs, func(addr string) ipc.Config {
		var mech func() (sasl.Mechanism, error)
		if k := cfg.Kerberos; k != nil {
			mech = func() (sasl.Mechanism, error) { return k.mechanism(addr) }
		}
		return ipc.Config{Addr: addr, Protocol: ProtocolApplicationClient, User: userName, Mechanism: mech,
			Dial: ipc.DialFunc(cfg.Dial), PingInterval: cfg.PingInterval, Log: log}
	}, cfg.IdleTimeout, cfg.Backoff, log, ErrNoActiveRM)
	if err != nil {
		return nil, fmt.Errorf("yarn client: %w", err)
	}
	return &Client{ep: ep}, nil
}

// CurrentUser is the Hadoop user of a client that names none, as Hadoop
// picks it for SIMPLE authentication: $HADOOP_USER_NAME, else the OS user
// (else $USER).
func CurrentUser(getenv func(string) string) string {
	if u := getenv("HADOOP_USER_NAME"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return getenv("USER")
}

// Close closes the connections.
func (c *Client) Close() error { return c.ep.close() }

// GetNewApplication reserves an application id; the answer also carries
// the largest container the cluster can give.
func (c *Client) GetNewApplication(ctx context.Context) (NewApplication, error) {
	resp := &hadoopyarn.GetNewApplicationResponseProto{}
	if err := c.ep.call(ctx, "getNewApplication", &hadoopyarn.GetNewApplicationRequestProto{}, resp); err != nil {
		return NewApplication{}, err
	}
	return NewApplication{ID: ApplicationID(resp.GetApplicationId()), MaxCapability: resourceFromProto(resp.GetMaximumCapability())}, nil
}

// SubmitApplication submits an application under an id from
// GetNewApplication. The RM treats a repeated submission of the same id as
// done, so a retry after failover is safe.
func (c *Client) SubmitApplication(ctx context.Context, sub Submission) error {
	asc, err := submissionProto(sub)
	if err != nil {
		return err
	}
	return c.ep.call(ctx, "submitApplication",
		&hadoopyarn.SubmitApplicationRequestProto{ApplicationSubmissionContext: asc},
		&hadoopyarn.SubmitApplicationResponseProto{})
}

// GetApplicationReport returns the RM's report of an application
// (application_<cluster timestamp>_<number>).
func (c *Client) GetApplicationReport(ctx context.Context, appID string) (ApplicationReport, error) {
	id, err := ParseApplicationID(appID)
	if err != nil {
		return ApplicationReport{}, err
	}
	resp := &hadoopyarn.GetApplicationReportResponseProto{}
	if err := c.ep.call(ctx, "getApplicationReport", &hadoopyarn.GetApplicationReportRequestProto{ApplicationId: id}, resp); err != nil {
		return ApplicationReport{}, err
	}
	return applicationReportFromProto(resp.GetApplicationReport()), nil
}

// GetApplications lists the applications of the given types (none: every
// type) in the given states (NEW … KILLED; none: every state), as `yarn
// application -list` asks.
func (c *Client) GetApplications(ctx context.Context, types []string, states ...string) ([]ApplicationReport, error) {
	ps, err := applicationStates(states)
	if err != nil {
		return nil, err
	}
	resp := &hadoopyarn.GetApplicationsResponseProto{}
	if err := c.ep.call(ctx, "getApplications", &hadoopyarn.GetApplicationsRequestProto{ApplicationTypes: types, ApplicationStates: ps}, resp); err != nil {
		return nil, err
	}
	out := make([]ApplicationReport, 0, len(resp.GetApplications()))
	for _, a := range resp.GetApplications() {
		out = append(out, applicationReportFromProto(a))
	}
	return out, nil
}

// ForceKillApplication asks the RM to kill an application once and
// reports whether the kill has completed.
func (c *Client) ForceKillApplication(ctx context.Context, appID, diagnostics string) (bool, error) {
	id, err := ParseApplicationID(appID)
	if err != nil {
		return false, err
	}
	req := &hadoopyarn.KillApplicationRequestProto{ApplicationId: id}
	if diagnostics != "" {
		req.Diagnostics = proto.String(diagnostics)
	}
	resp := &hadoopyarn.KillApplicationResponseProto{}
	if err := c.ep.call(ctx, "forceKillApplication", req, resp); err != nil {
		return false, err
	}
	return resp.GetIsKillCompleted(), nil
}

// KillApplication calls ForceKillApplication until the kill completes or
// ctx ends, as `yarn application -kill` does.
func (c *Client) KillApplication(ctx context.Context, appID, diagnostics string) error {
	for {
		done, err := c.ForceKillApplication(ctx, appID, diagnostics)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kill %s: %w", appID, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// GetClusterNodes lists NodeManagers in the given states (RUNNING, LOST, …;
// none: the RM's default).
func (c *Client) GetClusterNodes(ctx context.Context, states ...string) ([]NodeReport, error) {
	ps, err := nodeStates(states)
	if err != nil {
		return nil, err
	}
	resp := &hadoopyarn.GetClusterNodesResponseProto{}
	if err := c.ep.call(ctx, "getClusterNodes", &hadoopyarn.GetClusterNodesRequestProto{NodeStates: ps}, resp); err != nil {
		return nil, err
	}
	out := make([]NodeReport, 0, len(resp.GetNodeReports()))
	for _, n := range resp.GetNodeReports() {
		out = append(out, nodeReportFromProto(n))
	}
	return out, nil
}

// GetClusterMetrics returns NodeManager counts.
func (c *Client) GetClusterMetrics(ctx context.Context) (ClusterMetrics, error) {
	resp := &hadoopyarn.GetClusterMetricsResponseProto{}
	if err := c.ep.call(ctx, "getClusterMetrics", &hadoopyarn.GetClusterMetricsRequestProto{}, resp); err != nil {
		return ClusterMetrics{}, err
	}
	return clusterMetricsFromProto(resp.GetClusterMetrics()), nil
}

// GetResourceTypeInfo lists the resource types the RM knows (memory-mb,
// vcores, and e.g. yarn.io/gpu). The RM silently drops asks for types not
// listed here, so check before asking.
func (c *Client) GetResourceTypeInfo(ctx context.Context) ([]ResourceType, error) {
	resp := &hadoopyarn.GetAllResourceTypeInfoResponseProto{}
	if err := c.ep.call(ctx, "getResourceTypeInfo", &hadoopyarn.GetAllResourceTypeInfoRequestProto{}, resp); err != nil {
		return nil, err
	}
	return resourceTypesFromProto(resp.GetResourceTypeInfo()), nil
}

// HasResourceType reports whether name is among types.
func HasResourceType(types []ResourceType, name string) bool {
	for _, t := range types {
		if t.Name == name {
			return true
		}
	}
	return false
}

// CheckResource returns an error wrapping ErrResourceNotFound that names
// every extended resource in r the RM does not know (types from
// GetResourceTypeInfo or the register response). The RM itself drops
// unknown names silently, so an ask would otherwise lose them.
func CheckResource(types []ResourceType, r Resource) error {
	var missing, known []string
	for _, t := range types {
		known = append(known, t.Name)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Extra)) {
		if !HasResourceType(types, k) {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: resourcemanager does not know resource type %s (it knows %s; see yarn.resource-types in resource-types.xml)",
		ErrResourceNotFound, strings.Join(missing, ", "), strings.Join(known, ", "))
}
