package contract

// The rendezvous of a worker group: before it runs the worker command, the
// container-launcher of a group that waits (gang start, depends-on, a
// port) reports its devices (and port) to the AM, then asks the AM's
// rendezvous endpoint, until the answer is ready, for the worker's rank and
// its peers' addresses:
//
//	launcher                              AM
//	  reserve devices, pick XRES_PORT
//	  POST /api/report {container, resources, port}  ──►  devices reserved
//	  GET  /api/rendezvous?container=ID  ──►  {"ready": false, "waiting": "2 of 4 …"}
//	  …  (every RendezvousPoll)
//	  GET  /api/rendezvous?container=ID  ──►  {"ready": true, "env": {…}, "probe": [host:port…]}
//	  connect to every probe address (the dependencies listen), then exec the
//	  worker with env added
//	  … port "worker": once the worker has written its port into
//	  XRES_PORT_FILE ("43210\n"):
//	  POST /api/report {container, resources, port}  ──►  address known:
//	                                                       dependents go
const (
	// EnvRendezvousURL names the worker-environment variable that carries
	// the AM's rendezvous endpoint (the xres AM sets it on every worker).
	EnvRendezvousURL = "XRES_RENDEZVOUS_URL"
	// EnvRendezvousWait is "true" when the worker must not start before
	// the AM says it is ready (gang, depends-on, a port, xres.rendezvous);
	// otherwise the launcher asks once and starts the worker either way.
	EnvRendezvousWait = "XRES_RENDEZVOUS_WAIT"
	// EnvPortWanted is the port the group declares: "auto" (the launcher
	// picks a free one) or a number, which the launcher reports and gives
	// the worker as XRES_PORT; or PortWantedWorker.
	EnvPortWanted = "XRES_PORT_WANTED"
	// EnvPort is the worker's port.
	EnvPort = "XRES_PORT"
	// PortWantedWorker is EnvPortWanted for a worker that binds a port of
	// its own choosing (any free one) and tells its launcher: it writes
	// the number, then a newline, into the file EnvPortFile names; the
	// launcher reports it to the AM, which then publishes the address.
	PortWantedWorker = "worker"
	// EnvPortFile names the file a PortWantedWorker worker writes its port
	// into (PortFileName in the container's working directory).
	EnvPortFile = "XRES_PORT_FILE"
	// PortFileName is the file EnvPortFile names inside a YARN container.
	PortFileName = "xres-port"
	// RendezvousPath is the endpoint's path under the AM's tracking URL
	// (GET ?container=ID).
	RendezvousPath = "/api/rendezvous"
)

// Rendezvous is the AM's answer to a worker's launcher.
//
//	{"ready": true, "group": "trainer", "rank": 1, "world-size": 4,
//	 "env": {"XRES_RANK": "1", "XRES_WORLD_SIZE": "4", "MASTER_ADDR": "nm1", …},
//	 "probe": ["nm2:41000"]}
type Rendezvous struct {
	Ready bool `json:"ready"`
	// Waiting says what the worker waits for while not Ready.
	Waiting string `json:"waiting,omitempty"`
	// Standby: the container is a standby spare (no rank): its launcher
	// keeps the devices and asks again until the AM promotes it to a lost
	// worker's rank (Ready).
	Standby   bool   `json:"standby,omitempty"`
	Group     string `json:"group"`
	Rank      int    `json:"rank"`
	WorldSize int    `json:"world-size"`
	// Env is added to the worker's environment (XRES_GROUP, XRES_RANK,
	// XRES_WORLD_SIZE, XRES_<GROUP>_ADDRESSES, the framework's variables).
	Env map[string]string `json:"env,omitempty"`
	// Probe are the dependencies' addresses (host:port): the launcher
	// starts the worker once each accepts a connection.
	Probe []string `json:"probe,omitempty"`
}
