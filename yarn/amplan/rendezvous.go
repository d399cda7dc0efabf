package amplan

import (
	"maps"
	"strconv"
	"strings"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
)

// Waits reports whether the plan's workers wait for the AM's rendezvous
// before they run.
func (p *Plan) Waits() bool {
	return p.Gang || len(p.DependsOn) > 0 || p.Port != 0 || p.Rendezvous != "" || p.Spares > 0
}

// RendezvousLaunch is g's launch context with what every worker of g is
// started with added: the rendezvous endpoint (when the AM has a tracking
// URL), whether to wait for it, the group's port, group name and world
// size. g's own environment is not written.
func RendezvousLaunch(g Group, trackingURL string) yarn.LaunchContext {
	l := g.Launch
	env := maps.Clone(l.Env)
	if env == nil {
		env = map[string]string{}
	}
	if trackingURL != "" {
		env[contract.EnvRendezvousURL] = strings.TrimSuffix(trackingURL, "/") + contract.RendezvousPath
	}
	if g.Plan.Waits() {
		env[contract.EnvRendezvousWait] = "true"
	}
	switch p := g.Plan.Port; {
	case p == PortAuto:
		env[contract.EnvPortWanted] = "auto"
	case p == PortWorker:
		env[contract.EnvPortWanted] = contract.PortWantedWorker
	case p > 0:
		env[contract.EnvPortWanted] = strconv.Itoa(p)
	}
	env[contract.EnvGroup] = g.Name
	env[contract.EnvWorldSize] = strconv.Itoa(g.Plan.Workers)
	l.Env = env
	return l
}
