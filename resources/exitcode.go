package resources

// Exit codes of container-launcher, shared by the launcher (which exits
// with them) and the ApplicationMaster (which decides from them whether to
// replace a worker elsewhere). A worker that ran passes its own exit code
// through unchanged (128+N when it died of signal N, as a shell reports
// it). The launcher's own failures use a reserved block far from the codes
// workers and Hadoop commonly use (1, 2, 126, 127, 128+N such as 137 and
// 143, Flink's 239/243), so the ApplicationMaster can tell a bad job
// (configuration, worker command) from a bad node (discovery).
//
// 211 is what the configuration alone decides, the same on every host
// (am submit refuses it before staging: launch.CheckSpecs); 212 what this
// host decides: its devices, and a discovery script or device plugin
// missing or not executable here (check's advice: install it on every
// worker host), so that the AM blacklists the host and tries another.
//
// LauncherExits lists them with their meaning and blame; the README's
// tables are tested against it (both ways).
const (
	LauncherExitOK        = 0
	LauncherExitUsage     = 210
	LauncherExitConfig    = 211
	LauncherExitDiscovery = 212
	LauncherExitWorker    = 213
	LauncherExitInternal  = 214
	// LauncherExitAssignment: YARN's NodeManager may be assigning GPUs on
	// this host, but which ones this container holds could not be learnt.
	LauncherExitAssignment = 215
	// LauncherExitGPUFailed: a GPU the worker held failed while it ran (a
	// critical NVML event); the launcher stopped the worker to have it
	// replaced on a healthy GPU (docs/gpu-health.md).
	LauncherExitGPUFailed = 216
)

// Blame says whom a launcher exit code blames.
type Blame int

const (
	// BlameNone: the worker succeeded.
	BlameNone Blame = iota
	// BlameJob: the command line, the configuration or the worker; a
	// replacement elsewhere cannot help.
	BlameJob
	// BlameNode: the host (discovery, the launcher's own environment); a
	// replacement on another host may succeed.
	BlameNode
	// BlameDevice: one device of the host failed (it is quarantined
	// there); the worker is replaced without counting as a failure, and
	// the host stays in use (its other devices are fine), as YARN's
	// DISKS_FAILED is not the application's fault.
	BlameDevice
)

func (b Blame) String() string {
	switch b {
	case BlameNone:
		return "none"
	case BlameNode:
		return "node"
	case BlameDevice:
		return "device"
	default:
		return "job"
	}
}

// LauncherExit describes one of the launcher's reserved exit codes.
type LauncherExit struct {
	Code    int
	Name    string // short name for logs and reports ("config", "discovery", …)
	Meaning string
	Blame   Blame
}

// LauncherExits lists the launcher's own exit codes, in code order. The
// meanings are plain text (the README's tables give them with markdown
// code spans).
var LauncherExits = []LauncherExit{
	{LauncherExitOK, "ok", "the worker exited 0 (or probe/check found nothing wrong)", BlameNone},
	{LauncherExitUsage, "usage", "usage: a bad flag, no worker command", BlameJob},
	{LauncherExitConfig, "config", "configuration error, the same on every host: malformed file, bad key or value, unknown driver factory, " +
		"driver params rejected (--resources naming an unlisted resource); am submit refuses a configuration every launcher refuses", BlameJob},
	{LauncherExitDiscovery, "discovery", "discovery failed on this host: no free devices (the message names the holders), " +
		"a discovery script or device plugin missing or not executable here, driver or script failure", BlameNode},
	{LauncherExitWorker, "worker-start", "the worker command could not be started (not found, not executable; " +
		"with --per-device also a pinned worker whose exec failed)", BlameJob},
	{LauncherExitInternal, "internal", "internal: the info file could not be written, …", BlameNode},
	{LauncherExitAssignment, "assignment", "the NodeManager may assign GPUs on this host (YARN's GPU plugin) but could not say which this " +
		"container holds (its REST unreachable, refusing, SPNEGO without Kerberos credentials); nothing is guessed", BlameNode},
	{LauncherExitGPUFailed, "gpu-failed", "a GPU of the worker failed while it ran (a critical Xid, a double-bit ECC error, the GPU lost): " +
		"the GPU is quarantined on its host and the worker was stopped to be replaced on a healthy one (health.action replace), " +
		"or YARN assigned a quarantined GPU", BlameDevice},
}

// LauncherWorkerExit describes every code outside LauncherExits: the
// worker's own (its Code is -1, standing for any).
var LauncherWorkerExit = LauncherExit{Code: -1, Name: "worker",
	Meaning: "the worker's own exit code; 128+signal if a signal killed it (143 = SIGTERM, 137 = SIGKILL)", Blame: BlameJob}

// DescribeLauncherExit describes code; a code outside the reserved block is
// the worker's own (LauncherWorkerExit, blamed on the job).
func DescribeLauncherExit(code int) LauncherExit {
	for _, e := range LauncherExits {
		if e.Code == code {
			return e
		}
	}
	w := LauncherWorkerExit
	w.Code = code
	return w
}

// BadNodeExitCodes are the launcher codes that blame the host.
func BadNodeExitCodes() []int { return exitCodesBlaming(BlameNode) }

// DeviceExitCodes are the launcher codes that blame one device of the
// host: replaced without counting, the host kept.
func DeviceExitCodes() []int { return exitCodesBlaming(BlameDevice) }

// BadJobExitCodes are the launcher codes that blame the job.
func BadJobExitCodes() []int { return exitCodesBlaming(BlameJob) }

func exitCodesBlaming(b Blame) []int {
	var out []int
	for _, e := range LauncherExits {
		if e.Blame == b {
			out = append(out, e.Code)
		}
	}
	return out
}
