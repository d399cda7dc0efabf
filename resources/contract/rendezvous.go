package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

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

// The variables a rendezvous answer may set (Rendezvous.Env): the launcher
// passes on only these, each checked (CheckRendezvousVar); anything else
// an answer holds (a vendor's visible-devices variable, PATH, LD_PRELOAD,
// …) is dropped and logged by name.
const (
	EnvGroup     = "XRES_GROUP"
	EnvRank      = "XRES_RANK"
	EnvWorldSize = "XRES_WORLD_SIZE"
	// XRES_<GROUP>_ADDRESSES (AddressesEnv): a group's host:port list.
	addressesPrefix, addressesSuffix = "XRES_", "_ADDRESSES"
	// xres.rendezvous: torch.
	EnvTorchRank           = "RANK"
	EnvTorchWorldSize      = "WORLD_SIZE"
	EnvTorchLocalRank      = "LOCAL_RANK"
	EnvTorchLocalWorldSize = "LOCAL_WORLD_SIZE"
	EnvTorchMasterAddr     = "MASTER_ADDR"
	EnvTorchMasterPort     = "MASTER_PORT"
	// xres.rendezvous: tensorflow.
	EnvTFConfig = "TF_CONFIG"
	// maxRendezvousValue bounds one variable's value (TF_CONFIG of a
	// few thousand workers fits).
	maxRendezvousValue = 256 << 10
)

// AddressesEnv names XRES_<GROUP>_ADDRESSES for group name: upper-cased,
// every character other than A-Z and 0-9 replaced by "_".
func AddressesEnv(group string) string {
	var b strings.Builder
	b.WriteString(addressesPrefix)
	for _, r := range strings.ToUpper(group) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	b.WriteString(addressesSuffix)
	return b.String()
}

// ErrRendezvousVar marks a variable a rendezvous answer may not set, or a
// value it may not have.
var ErrRendezvousVar = errors.New("not a rendezvous variable")

// CheckRendezvousVar says whether a rendezvous answer may set name to
// value: name is one xres defines for the rendezvous, and value has its
// form (a count, a port, a host, host:port list, JSON). Errors name the
// variable, never quote the value.
func CheckRendezvousVar(name, value string) error {
	bad := func(what string) error { return fmt.Errorf("%w: %s: %s", ErrRendezvousVar, name, what) }
	if len(value) > maxRendezvousValue {
		return bad(fmt.Sprintf("value of %d bytes (at most %d)", len(value), maxRendezvousValue))
	}
	for _, r := range value {
		if r < 0x20 || r == 0x7f {
			return bad("control character in the value")
		}
	}
	switch name {
	case EnvRank, EnvWorldSize, EnvTorchRank, EnvTorchWorldSize, EnvTorchLocalRank, EnvTorchLocalWorldSize:
		if n, err := strconv.Atoi(value); err != nil || n < 0 || strconv.Itoa(n) != value {
			return bad("not a count")
		}
	case EnvTorchMasterPort:
		if n, err := strconv.Atoi(value); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != value {
			return bad("not a port")
		}
	case EnvTorchMasterAddr:
		if !hostName(value) {
			return bad("not a host name or address")
		}
	case EnvGroup:
		if value == "" || strings.ContainsAny(value, " \t=,;'\"\\$`") {
			return bad("not a group name")
		}
	case EnvTFConfig:
		var v map[string]any
		if err := json.Unmarshal([]byte(value), &v); err != nil {
			return bad("not a JSON object")
		}
	default:
		mid, pre := strings.CutPrefix(name, addressesPrefix)
		mid, suf := strings.CutSuffix(mid, addressesSuffix)
		if !pre || !suf || mid == "" || strings.Trim(mid, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
			return bad("xres sets no such variable")
		}
		for _, a := range strings.Split(value, ",") {
			if a != "" && CheckAddress(a) != nil {
				return bad("not a list of host:port")
			}
		}
	}
	return nil
}

// CheckAddress checks one host:port of an answer (a peer's address).
func CheckAddress(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("%w: address: not host:port", ErrRendezvousVar)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || !hostName(host) {
		return fmt.Errorf("%w: address: not host:port", ErrRendezvousVar)
	}
	return nil
}

// hostName: a DNS name or an IP address.
func hostName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	return strings.Trim(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == "" && !strings.HasPrefix(h, "-")
}
