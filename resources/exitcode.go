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
//	code  constant               meaning                                          blame
//	----  ---------------------  -----------------------------------------------  -----
//	0     LauncherExitOK         worker exited 0 (or probe/check found nothing)   -
//	N     (worker)               worker's own exit code, 128+sig on signal death  job
//	210   LauncherExitUsage      bad command line (unknown flag, no worker)       job
//	211   LauncherExitConfig     configuration error: bad key or value, unknown   job
//	                             driver factory, driver rejected its params
//	212   LauncherExitDiscovery  discovery failed on this host: driver error,     node
//	                             script failed, no free devices (holders named)
//	213   LauncherExitWorker     the worker command could not be started          job
//	214   LauncherExitInternal   the launcher failed otherwise (info file not     node
//	                             writable, …)
const (
	LauncherExitOK        = 0
	LauncherExitUsage     = 210
	LauncherExitConfig    = 211
	LauncherExitDiscovery = 212
	LauncherExitWorker    = 213
	LauncherExitInternal  = 214
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
)

func (b Blame) String() string {
	switch b {
	case BlameNone:
		return "none"
	case BlameNode:
		return "node"
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

// LauncherExits lists the launcher's own exit codes, in code order.
var LauncherExits = []LauncherExit{
	{LauncherExitOK, "ok", "the worker exited 0 (or probe/check found nothing wrong)", BlameNone},
	{LauncherExitUsage, "usage", "bad command line (unknown flag, no worker command)", BlameJob},
	{LauncherExitConfig, "config", "configuration error: bad key or value, unknown driver factory, driver rejected its parameters", BlameJob},
	{LauncherExitDiscovery, "discovery", "discovery failed on this host: driver or script error, no free devices", BlameNode},
	{LauncherExitWorker, "worker-start", "the worker command could not be started", BlameJob},
	{LauncherExitInternal, "internal", "the launcher failed otherwise (info file not writable, …)", BlameNode},
}

// DescribeLauncherExit describes code; a code outside the reserved block is
// the worker's own ("worker", blamed on the job).
func DescribeLauncherExit(code int) LauncherExit {
	for _, e := range LauncherExits {
		if e.Code == code {
			return e
		}
	}
	return LauncherExit{Code: code, Name: "worker", Meaning: "the worker's own exit code", Blame: BlameJob}
}

// BadNodeExitCodes are the launcher codes that blame the host.
func BadNodeExitCodes() []int { return exitCodesBlaming(BlameNode) }

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
