package contract

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
