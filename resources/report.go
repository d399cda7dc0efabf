package resources

// EnvReportURL names the worker-environment variable that carries the
// ApplicationMaster's report endpoint: the xres AM sets it, and the
// container-launcher POSTs a DeviceReport there after discovery.
const EnvReportURL = "XRES_AM_REPORT_URL"

// DeviceReport is what a container-launcher tells its ApplicationMaster:
// the devices it discovered, per external resource name (the same map the
// info file holds).
//
//	{"container": "container_…_000002",
//	 "resources": {"gpu": [{"index": "0", "uuid": "GPU-…"}, …]}}
type DeviceReport struct {
	Container string                  `json:"container"`
	Resources map[string][]Properties `json:"resources"`
}
