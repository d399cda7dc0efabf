package contract

import (
	"time"

	"github.com/xres/xres/resources"
)

// EnvReportURL names the worker-environment variable that carries the
// ApplicationMaster's report endpoint: the xres AM sets it, and the
// container-launcher POSTs a DeviceReport there after discovery.
const EnvReportURL = "XRES_AM_REPORT_URL"

// ReportPath is the path, under the AM's tracking URL, that accepts a
// DeviceReport: POST, Content-Type application/json.
const ReportPath = "/api/report"

// ReportFile is the file, in the worker container's log folder, where the
// container-launcher also keeps its DeviceReport (one JSON line): a later
// ApplicationMaster attempt that adopts the running worker reads it from the
// NodeManager's container-log web service, as the RM's web proxy does not
// pass a POST on to the new attempt.
const ReportFile = "xres-devices.json"

// ReportAccepted is the success rule of a report POST: any 2xx status
// (the xres AM answers 204). Anything else is a failure the launcher logs;
// it never stops the worker.
func ReportAccepted(status int) bool { return status >= 200 && status < 300 }

// DeviceReport is what a container-launcher tells its ApplicationMaster:
// the devices it discovered, per external resource name (the same map the
// info file holds).
//
//	{"container": "container_…_000002",
//	 "resources": {"gpu": [{"index": "0", "uuid": "GPU-…"}, …]}}
type DeviceReport struct {
	Container string `json:"container"`
	// Seq grows with every report a container's launcher sends (it
	// starts at the launcher's clock in nanoseconds): the AM refuses a
	// report whose Seq is not above the last it took of the same kind (a
	// full report, or a command-started one), so one recorded on the wire
	// cannot be replayed. 0 only in a kept ReportFile of an older launcher.
	Seq       uint64                            `json:"seq,omitempty"`
	Resources map[string][]resources.Properties `json:"resources"`
	// Port is the port the worker serves on (XRES_PORT), for a group
	// that declares one; 0: none.
	Port int `json:"port,omitempty"`
	// The launcher's timeline, on its host's clock, for the AM's
	// per-worker timeline: when it started, and when it had reserved the
	// devices (just before this report). Once the worker command has
	// started, a second report holds only Container and CommandStarted.
	LauncherStarted time.Time `json:"launcher-started,omitzero"`
	Reserved        time.Time `json:"reserved,omitzero"`
	CommandStarted  time.Time `json:"command-started,omitzero"`
	// GPU, in a samples report (nothing else but Container and Seq), is
	// the latest sample of each GPU the worker holds (GPUSample).
	GPU []GPUSample `json:"gpu,omitempty"`
	// Health, in a health report (nothing else but Container and Seq), is
	// the critical device events the launcher's health watch saw on its
	// worker's devices (docs/gpu-health.md).
	Health []HealthEvent `json:"health,omitempty"`
}

// HealthEvent is one critical event on a worker's device, as its launcher
// reports it (on its host's clock):
//
//	{"resource":"gpu","device":"GPU-…","event":"xid","xid":94,
//	 "reason":"Xid 94 (contained ECC error) on GPU-… (index 0)","action":"replace","time":"…"}
type HealthEvent struct {
	Resource string `json:"resource"`
	// Device is the device's key (a GPU's uuid); "" when the driver could
	// not say which device (NVML's GPU lost without a handle).
	Device string `json:"device,omitempty"`
	// Event is the kind: "xid", "ecc-double-bit", "gpu-lost"; XID the
	// Xid of an "xid" event.
	Event string `json:"event"`
	XID   uint64 `json:"xid,omitempty"`
	// Reason says what happened (the Xid and its meaning).
	Reason string `json:"reason"`
	// Action is the launcher's health.action: "replace" (the worker is
	// stopped, the launcher exits 216) or "notify" (it keeps running).
	Action string    `json:"action"`
	Time   time.Time `json:"time"`
}
