package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/builtin"
	"github.com/xres/xres/resources"
)

// fakeHost is a hand-written stand-in for a host's devices and its
// coordination table: drivers made by its factory reserve devices in
// Discover and free them in Release, so tests can see what is held.
type fakeHost struct {
	mu       sync.Mutex
	devices  map[string]int                    // resource -> number of devices
	held     map[string][]string               // resource -> indices held
	fail     map[string]error                  // resource -> Discover error (after reserving)
	block    map[string]bool                   // resource -> Discover waits for ctx
	props    map[string][]string               // resource -> extra property keys per device
	extra    map[string][]resources.Properties // resource -> properties of device i
	released map[string]int                    // resource -> Release calls
	dryRuns  int                               // drivers built with DryRun
	started  chan string                       // resource names whose Discover began
	params   map[string]map[string]string
	timeouts map[string]time.Duration // resource -> driver.Options.Timeout
}

func newFakeHost() *fakeHost {
	return &fakeHost{
		devices:  map[string]int{},
		held:     map[string][]string{},
		fail:     map[string]error{},
		block:    map[string]bool{},
		props:    map[string][]string{},
		extra:    map[string][]resources.Properties{},
		released: map[string]int{},
		started:  make(chan string, 16),
		params:   map[string]map[string]string{},
	}
}

func (h *fakeHost) factory() driver.Factory {
	return driver.FactoryFunc(func(o driver.Options) (driver.Driver, error) {
		if o.Params["reject"] != "" {
			return nil, fmt.Errorf("param reject: %s", o.Params["reject"])
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if o.DryRun {
			h.dryRuns++
		}
		h.params[o.Resource] = o.Params
		if h.timeouts == nil {
			h.timeouts = map[string]time.Duration{}
		}
		h.timeouts[o.Resource] = o.Timeout
		return &fakeDriver{host: h, name: o.Resource, dryRun: o.DryRun}, nil
	})
}

// Held returns the devices held for resource.
func (h *fakeHost) Held(resource string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.held[resource]...)
}

// Releases returns how often resource was released.
func (h *fakeHost) Releases(resource string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.released[resource]
}

type fakeDriver struct {
	host   *fakeHost
	name   string
	dryRun bool
}

var (
	_ driver.Driver   = (*fakeDriver)(nil)
	_ driver.Releaser = (*fakeDriver)(nil)
)

func (d *fakeDriver) Discover(ctx context.Context, amount int64) ([]resources.Info, error) {
	d.host.started <- d.name
	h := d.host
	h.mu.Lock()
	block := h.block[d.name]
	h.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	taken := map[string]bool{}
	for _, k := range h.held[d.name] {
		taken[k] = true
	}
	var infos []resources.Info
	var chosen []string
	for i := 0; i < h.devices[d.name] && int64(len(chosen)) < amount; i++ {
		k := strconv.Itoa(i)
		if taken[k] {
			continue
		}
		chosen = append(chosen, k)
		p := resources.Properties{"index": k}
		for _, extra := range h.props[d.name] {
			p[extra] = fmt.Sprintf("%s-%s-%d", d.name, extra, i)
		}
		if i < len(h.extra[d.name]) {
			for k, v := range h.extra[d.name][i] {
				p[k] = v
			}
		}
		infos = append(infos, p)
	}
	if int64(len(chosen)) < amount {
		return nil, fmt.Errorf("%w: %d of %s requested, %d free", driver.ErrNotEnoughDevices, amount, d.name, len(chosen))
	}
	if !d.dryRun {
		h.held[d.name] = append(h.held[d.name], chosen...)
		sort.Strings(h.held[d.name])
	}
	if err := h.fail[d.name]; err != nil {
		return nil, err // reserved, then failed: Release must still free them
	}
	return infos, nil
}

func (d *fakeDriver) Release(ctx context.Context) error {
	h := d.host
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released[d.name]++
	if !d.dryRun {
		delete(h.held, d.name)
	}
	return nil
}

// registryWith returns a registry holding the fake host's factory under
// "fake" and alias "com.example.FakeFactory".
func registryWith(h *fakeHost) fakeRegistry {
	r := driver.NewRegistry()
	if err := r.Register("fake", h.factory(), "com.example.FakeFactory"); err != nil {
		panic(err)
	}
	vendors, err := builtin.NewRegistry(func(string) string { return "" })
	if err != nil {
		panic(err)
	}
	return fakeRegistry{Registry: r, vendors: vendors}
}

// fakeRegistry is a registry of the fake host's factory that finds the
// built-in drivers' vendors (visible-devices.vendor), as the command's
// registry does.
type fakeRegistry struct {
	*driver.Registry
	vendors *builtin.Registry
}

// NamedVendor implements driver.VendorFinder.
func (f fakeRegistry) NamedVendor(params map[string]string) (driver.VendorReporter, bool) {
	return f.vendors.NamedVendor(params)
}

// syncBuffer is a bytes.Buffer safe for the logger and the worker's output
// copier writing at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var errBoom = errors.New("boom: device fell off the bus")
