package driver

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Sentinel errors of the registry and the shared selection layer.
var (
	// ErrUnknownFactory: no factory is registered under the requested name.
	ErrUnknownFactory = errors.New("unknown driver factory")
	// ErrDuplicateFactory: a name or alias is registered twice.
	ErrDuplicateFactory = errors.New("driver factory already registered")
	// ErrNotEnoughDevices: fewer devices than the amount could be found or
	// reserved. Every "not enough devices" failure of the built-in drivers
	// (script output, enumeration, host coordination) matches it.
	ErrNotEnoughDevices = errors.New("not enough devices")
)

// Registry maps factory names (and aliases such as Flink's Java class names)
// to factories. It is filled explicitly by the caller, never by init().
// The zero value is not usable; call NewRegistry. Safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	byName  map[string]Factory
	primary map[string]string // every registered name or alias -> its primary name
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]Factory{}, primary: map[string]string{}}
}

// Register adds f under name and each alias. Names are case-sensitive and
// must not be empty; registering a name or alias twice fails with
// ErrDuplicateFactory and registers nothing.
func (r *Registry) Register(name string, f Factory, aliases ...string) error {
	if f == nil {
		return fmt.Errorf("register driver factory %q: nil factory", name)
	}
	names := append([]string{name}, aliases...)
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("register driver factory %q: empty name or alias", name)
		}
		if _, ok := r.byName[n]; ok || seen[n] {
			return fmt.Errorf("register driver factory %q: %w: %q", name, ErrDuplicateFactory, n)
		}
		seen[n] = true
	}
	for _, n := range names {
		r.byName[n] = f
		r.primary[n] = name
	}
	return nil
}

// Lookup returns the factory registered under name (a primary name or an
// alias). An unknown name fails with ErrUnknownFactory and lists the known
// names.
func (r *Registry) Lookup(name string) (Factory, error) {
	r.mu.RLock()
	f, ok := r.byName[name]
	r.mu.RUnlock()
	if !ok {
		known := r.Names()
		list := "none registered"
		if len(known) > 0 {
			list = "known: " + strings.Join(known, ", ")
		}
		return nil, fmt.Errorf("look up driver factory %q: %w (%s)", name, ErrUnknownFactory, list)
	}
	return f, nil
}

// Names lists every registered name and alias, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Canonical returns the primary name a name or alias was registered under.
func (r *Registry) Canonical(name string) (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.primary[name]
	return p, ok
}
