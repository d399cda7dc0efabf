package contract

import (
	"fmt"

	"github.com/xres/xres/conf/localfile"
)

// The worker counts the AM serves (GET on EnvWorkersURL) and the file the
// launcher keeps current from them in the container (EnvWorkersFile).
const (
	// EnvWorkersURL names, in every worker's environment, the URL of the
	// AM's worker counts (JSON: target, minimum, running, groups).
	EnvWorkersURL = "XRES_WORKERS_URL"
	// EnvWorkers is the number of workers wanted (of every group) when the
	// worker was started.
	EnvWorkers = "XRES_WORKERS"
	// EnvWorkersFile names, in the worker's environment, the file the
	// launcher rewrites (a temporary file renamed over it) whenever the
	// AM's worker counts change.
	EnvWorkersFile = "XRES_WORKERS_FILE"
	// WorkersFileName is that file's name in the container's working
	// directory.
	WorkersFileName = "xres-workers.json"
)

// WriteWorkersFile writes counts (the AM's answer at EnvWorkersURL, as
// served) to path, renamed over the old file: a worker reading it on its
// rescaling signal sees the old counts or the new ones, never half.
func WriteWorkersFile(path string, counts []byte) error {
	if err := localfile.WriteFileAtomic(path, counts, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
