package yarn

import (
	"fmt"
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

// ApplicationReportFromProto converts the RPC form.
func ApplicationReportFromProto(p *hadoopyarn.ApplicationReportProto) ApplicationReport {
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

// appStates converts state names to the RPC enum; an unknown name is an error.
func appStates(states []string) ([]hadoopyarn.YarnApplicationStateProto, error) {
	out := make([]hadoopyarn.YarnApplicationStateProto, 0, len(states))
	for _, s := range states {
		v, ok := hadoopyarn.YarnApplicationStateProto_value[s]
		if !ok {
			return nil, fmt.Errorf("unknown YARN application state %q", s)
		}
		out = append(out, hadoopyarn.YarnApplicationStateProto(v))
	}
	return out, nil
}
