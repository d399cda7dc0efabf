package params

import (
	"fmt"
	"time"

	"github.com/xres/xres/conf"
)

// The params of GPU health while workers run and of the host-wide
// quarantine (docs/gpu-health.md); driver/coord and driver/gpu declare them.
var (
	HealthAction = Param{Name: "health.action", Type: conf.TypeString, Values: []string{HealthReplace, HealthNotify}, Default: HealthReplace}
	// HealthAppXIDs: the Xids caused by the application, not the GPU
	// (NVIDIA's Kubernetes device plugin's default list).
	HealthAppXIDs      = Param{Name: "health.application-xids", Type: conf.TypeString, Default: "13,31,43,45,68,109"}
	HealthQuietPeriod  = Param{Name: "health.quarantine.quiet-period", Type: conf.TypeDuration, Default: "10 min"}
	HealthReturnProbed = Param{Name: "health.quarantine.probe", Type: conf.TypeBool, Default: "true"}
)

// health.action's values.
const (
	HealthReplace = "replace"
	HealthNotify  = "notify"
)

// DefaultQuietPeriod is health.quarantine.quiet-period's default.
const DefaultQuietPeriod = 10 * time.Minute

// QuarantineReturn is how a quarantined device returns by itself.
type QuarantineReturn struct {
	// Quiet: how long after its last critical event (0: never by itself).
	Quiet time.Duration
	// Probed: and only once discovery's health checks pass on it.
	Probed bool
}

// ReadQuarantineReturn reads health.quarantine.quiet-period ("0" turns the
// return off: only `container-launcher probe --clear` ends a quarantine)
// and health.quarantine.probe.
func ReadQuarantineReturn(resource string, p map[string]string) (QuarantineReturn, error) {
	r := QuarantineReturn{Quiet: DefaultQuietPeriod, Probed: true}
	if raw, ok := HealthQuietPeriod.Lookup(p); ok {
		d, err := ParseDuration(raw)
		if err != nil || d < 0 {
			return r, fmt.Errorf("%s: %q is not a duration (0 turns the return off): %w", HealthQuietPeriod.Key(resource), raw, ErrInvalidParam)
		}
		r.Quiet = d
	}
	probed, err := HealthReturnProbed.Bool(resource, p)
	if err != nil {
		return r, err
	}
	r.Probed = probed
	return r, nil
}
