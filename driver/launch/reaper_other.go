//go:build !linux || !amd64

package launch

// startReaper starts the reaper of process group pgid: a shell here (the
// cloned reaper is written for linux/amd64).
func startReaper(pgid int) (*reaper, error) { return startShellReaper(pgid) }
