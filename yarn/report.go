package yarn

import (
	"strings"
	"time"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
)

// ApplicationReport is the ResourceManager's report of one application,
// the same whether it came over RPC (ApplicationReportProto) or REST
// (/ws/v1/cluster/apps).
type ApplicationReport struct {
	ID          string // application_<cluster timestamp>_<number>
	Name        string
	Type        string // applicationType (XRES for ours)
	User        string
	Queue       string
	State       string // NEW, NEW_SAVING, SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, KILLED
	FinalStatus string // UNDEFINED, SUCCEEDED, FAILED, KILLED
	Progress    float32
	TrackingURL string
	// Diagnostics is "" when the RM has none (it says "N/A").
	Diagnostics string
	AMHost      string // host of the current attempt's AM; "" before it runs
	StartTime   time.Time
	FinishTime  time.Time // zero while it runs
}

// Ended reports whether the application is over (FINISHED, FAILED or KILLED).
func (r ApplicationReport) Ended() bool { return AppStateEnded(r.State) }

// AppStateEnded reports whether a YARN application state is a final one.
func AppStateEnded(state string) bool {
	switch state {
	case "FINISHED", "FAILED", "KILLED":
		return true
	}
	return false
}

// Succeeded reports whether the application ended with final status SUCCEEDED.
func (r ApplicationReport) Succeeded() bool { return r.FinalStatus == "SUCCEEDED" }

// CleanDiagnostics maps YARN's "no diagnostics" ("N/A", blanks) to "".
func CleanDiagnostics(s string) string {
	if s = strings.TrimSpace(s); s == "N/A" {
		return ""
	}
	return s
}

// millis is a time from ms since the epoch; zero for 0 or less.
func millis(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// applicationReportFromProto converts the RPC form.
func applicationReportFromProto(p *hadoopyarn.ApplicationReportProto) ApplicationReport {
	r := ApplicationReport{
		Name: p.GetName(), Type: p.GetApplicationType(), User: p.GetUser(), Queue: p.GetQueue(),
		State:       p.GetYarnApplicationState().String(),
		FinalStatus: strings.TrimPrefix(p.GetFinalApplicationStatus().String(), "APP_"),
		Progress:    p.GetProgress(), TrackingURL: p.GetTrackingUrl(), Diagnostics: CleanDiagnostics(p.GetDiagnostics()),
		StartTime: millis(p.GetStartTime()), FinishTime: millis(p.GetFinishTime()),
	}
	if p.GetApplicationId() != nil {
		r.ID = ApplicationID(p.GetApplicationId())
	}
	if h := p.GetHost(); h != "" && h != "N/A" {
		r.AMHost = h
	}
	return r
}

// NodeReport is the ResourceManager's report of one NodeManager, over RPC
// (NodeReportProto) or REST (/ws/v1/cluster/nodes) alike.
type NodeReport struct {
	ID          string // host:port of the NodeManager's RPC address
	HTTPAddress string // host:port of its web service
	Rack        string
	State       string // NEW, RUNNING, UNHEALTHY, DECOMMISSIONED, LOST, …
	Containers  int
	Capability  Resource
	Used        Resource
	Health      string
	Labels      []string // node labels (RPC only; none: the default partition)
}

// nodeReportFromProto converts the RPC form.
func nodeReportFromProto(p *hadoopyarn.NodeReportProto) NodeReport {
	return NodeReport{ID: NodeID(p.GetNodeId()), HTTPAddress: p.GetHttpAddress(), Rack: p.GetRackName(),
		State: strings.TrimPrefix(p.GetNodeState().String(), "NS_"), Containers: int(p.GetNumContainers()),
		Capability: resourceFromProto(p.GetCapability()), Used: resourceFromProto(p.GetUsed()), Health: p.GetHealthReport(),
		Labels: p.GetNodeLabels()}
}

// ClusterMetrics is the RM's count of NodeManagers by state
// (getClusterMetrics).
type ClusterMetrics struct {
	NodeManagers   int // num_node_managers
	Decommissioned int
	Active         int
	Lost           int
	Unhealthy      int
	Rebooted       int
}

func clusterMetricsFromProto(p *hadoopyarn.YarnClusterMetricsProto) ClusterMetrics {
	return ClusterMetrics{NodeManagers: int(p.GetNumNodeManagers()), Decommissioned: int(p.GetNumDecommissionedNms()),
		Active: int(p.GetNumActiveNms()), Lost: int(p.GetNumLostNms()), Unhealthy: int(p.GetNumUnhealthyNms()),
		Rebooted: int(p.GetNumRebootedNms())}
}

// Submission is one application for the RM to start: its AM container
// (submitApplication's ApplicationSubmissionContext, or the REST body).
type Submission struct {
	AppID       string // from NewApplication
	Name        string
	Queue       string
	Type        string // applicationType
	AMResource  Resource
	MaxAttempts int32 // 0: the cluster's yarn.resourcemanager.am.max-attempts
	AM          LaunchContext
	// NodeLabel is the application's node label expression (Flink's
	// yarn.application.node-label): the AM container's, and the workers'
	// where their ask names none. "": the queue's default.
	NodeLabel string
	Tags      []string // applicationTags (yarn.tags)
	Priority  *int32   // yarn.application.priority; nil: the queue's default
}

// NewApplication is the RM's answer to getNewApplication: the id to submit
// under and the largest container it can grant.
type NewApplication struct {
	ID            string
	MaxCapability Resource
}
