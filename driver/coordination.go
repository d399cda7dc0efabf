package driver

// Coordination modes (Coordination.Mode).
const (
	CoordXres   = "xres"   // xres's host coordination (driver/coord)
	CoordScript = "script" // a Flink discovery script coordinates by itself
	CoordOff    = "off"    // nobody coordinates: every worker gets the first devices
)

// Coordination is how the driver a factory builds from a resource's params
// coordinates its devices on the host: what check inspects and probe
// reads the holders of.
type Coordination struct {
	Mode      string `json:"mode"`                 // CoordXres, CoordScript or CoordOff; "" unknown
	StateFile string `json:"state_file,omitempty"` // absolute; empty when off
	// FlinkFile is Flink's coordination file that xres mode honours beside
	// StateFile, in Flink's format.
	FlinkFile string `json:"flink_file,omitempty"`
	// Script is the resolved discovery script in script mode.
	Script string `json:"script,omitempty"`
	// Warnings are the notices the driver logs for these params (ignored
	// flags, conflicting settings, a missing default script).
	Warnings []string `json:"warnings,omitempty"`
}

// CoordinationReporter is implemented by a Factory that can say, without
// side effects and without building a driver, how the driver it would
// build for resource from params coordinates on the host. A malformed
// param is an error (the driver rejects it too). getenv nil means
// os.Getenv. A factory that does not implement it is taken to use the
// host coordination every built-in driver shares (driver/coord's reading
// of the coordination.* params).
type CoordinationReporter interface {
	Coordination(resource string, params map[string]string, getenv func(string) string) (Coordination, error)
}
