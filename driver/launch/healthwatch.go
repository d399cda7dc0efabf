package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/resources/params"
)

// The GPU health watch while the worker runs (docs/gpu-health.md): through
// the driver's HealthWatcher (the GPU driver runs `xres-nvml watch`: the
// launcher stays static, NVML needs cgo), the launcher quarantines
// host-wide each GPU a critical event names, and, when
// the event names a GPU its worker holds, acts as health.action says:
// replace (the worker's process group gets SIGTERM, SIGKILL after
// killGrace; the launcher exits ExitGPUFailed with a reason line) or
// notify (the worker keeps running; the event is appended to the file
// XRES_GPU_HEALTH_FILE names and logged).

// EnvGPUHealthFile names, for the worker, the file the launcher appends a
// line to for each critical event on one of its GPUs (health.action
// notify; with replace, the line comes just before the SIGTERM).
const EnvGPUHealthFile = "XRES_GPU_HEALTH_FILE"

// GPUHealthFileName is that file's name in the worker's directory.
const GPUHealthFileName = "xres-gpu-health"

// watchedGrant is one grant the watch covers.
type watchedGrant struct {
	resource  string
	watcher   driver.HealthWatcher
	opts      driver.Options
	stateFile string          // "" without xres coordination: nothing to quarantine in
	action    string          // health.action
	mine      map[string]bool // every property value of the worker's devices: an event's key among them is the worker's
}

// healthWatch is a running watch for one worker.
type healthWatch struct {
	ws     []driver.HealthWatch
	grants []watchedGrant
	file   string // the worker's health file
	log    logrus.FieldLogger
	// send, when set, sends a signed health report (its JSON body) to the
	// application master: it shows the event and the replacement.
	send      func(ctx context.Context, body []byte) error
	container string
	// stopWorkers, when set (--per-device: several process groups), is
	// replace's way to stop the workers instead of signalling pgid.
	stopWorkers func()

	mu     sync.Mutex
	reason string // set once a critical event on the worker's GPU ended it (replace)
	pgid   int
	done   bool        // stop was called
	kill   *time.Timer // replace's SIGKILL, pending
	// wg counts launch's goroutines: stop waits for them, so that nothing
	// of the watch outlives the worker's run.
	wg sync.WaitGroup
}

// launch runs start in the background (the worker is not delayed).
func (hw *healthWatch) launch(ctx context.Context) {
	hw.wg.Add(1)
	go func() {
		defer hw.wg.Done()
		hw.start(ctx)
	}()
}

func (hw *healthWatch) stopped() bool {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	return hw.done
}

// healthGrants picks the grants the watch covers: those whose driver
// factory can watch its devices (driver.HealthWatcher), with health.action
// read. A bad value is a configuration error naming the key.
func (l *Launcher) healthGrants(grants []Grant) ([]watchedGrant, error) {
	var out []watchedGrant
	for _, g := range grants {
		f, _, err := l.factory(g.Spec)
		if err != nil || f == nil || len(g.Devices) == 0 {
			continue
		}
		hw, ok := f.(driver.HealthWatcher)
		if !ok {
			continue
		}
		wg := watchedGrant{resource: g.Spec.Name, watcher: hw, mine: map[string]bool{},
			opts: driver.Options{Resource: g.Spec.Name, Params: g.Spec.Params, Log: l.Log, Getenv: l.Getenv, YarnKey: g.Spec.YarnKey}}
		for _, d := range g.Devices {
			for _, k := range d.Keys() {
				if v, _ := d.Property(k); v != "" {
					wg.mine[v] = true
				}
			}
		}
		if wg.action, err = params.HealthAction.Choice(g.Spec.Name, g.Spec.Params); err != nil {
			return nil, classify(ErrConfig, err)
		}
		if c := l.coordinationOf(g.Spec); c.Mode == driver.CoordXres {
			wg.stateFile = c.StateFile
		}
		out = append(out, wg)
	}
	return out, nil
}

// newHealthWatch is the watch of a worker's grants, not started yet; nil
// without a grant to watch.
func newHealthWatch(grants []watchedGrant, file string, log logrus.FieldLogger) *healthWatch {
	if len(grants) == 0 {
		return nil
	}
	return &healthWatch{grants: grants, file: file, log: log}
}

// start runs each grant's watch until ctx ends or stop; where one cannot
// (no helper, NVML unavailable) it says so in the log, and the worker runs
// unwatched. A watch lost while the worker runs is logged as an error.
func (hw *healthWatch) start(ctx context.Context) {
	if hw == nil {
		return
	}
	for _, g := range hw.grants {
		g := g
		log := hw.log.WithField("resource", g.resource)
		w, err := g.watcher.WatchHealth(ctx, g.opts, func(e driver.DeviceEvent) { hw.eventFor(g, e) })
		if errors.Is(err, driver.ErrHealthUnwatched) {
			log.WithError(err).Info("device health is not watched while the worker runs (docs/gpu-health.md)")
			continue
		}
		if err != nil {
			log.WithError(err).Error("device health is not watched while the worker runs")
			continue
		}
		hw.mu.Lock()
		stopped := hw.done
		hw.ws = append(hw.ws, w)
		hw.mu.Unlock()
		if stopped {
			w.Stop()
			return
		}
		log.WithField("devices", strings.Join(w.Watched(), ",")).Debug("device health watched while the worker runs")
		if u := w.Unwatched(); len(u) > 0 {
			log.WithField("devices", strings.Join(u, ",")).Warn("these devices report no health events: their failures are not noticed while workers run")
		}
		hw.wg.Add(1)
		go func() {
			defer hw.wg.Done()
			select {
			case <-w.Done():
				if ctx.Err() == nil && !hw.stopped() {
					log.WithError(w.Err()).Error("GPU health watch lost while the worker runs: a device failing now goes unnoticed until the next launch's discovery")
				}
			case <-ctx.Done():
				w.Stop()
			}
		}()
	}
}

// running tells the watch the worker's process group (the target of
// replace).
func (hw *healthWatch) running(pgid int) {
	if hw == nil {
		return
	}
	hw.mu.Lock()
	hw.pgid = pgid
	hw.mu.Unlock()
}

func (hw *healthWatch) eventFor(g watchedGrant, e driver.DeviceEvent) {
	log := hw.log.WithFields(logrus.Fields{"resource": g.resource, "event": e.Event, "device": e.Key})
	if e.XID != 0 {
		log = log.WithField("xid", e.XID)
	}
	if !e.Critical {
		log.Info("device event caused by the application (" + params.HealthAppXIDs.Key(g.resource) + "): the device stays in service: " + e.Reason)
		return
	}
	mine := e.Key == "" || g.mine[e.Key] // no key: NVML could not say which GPU was lost: maybe ours
	if g.stateFile != "" {
		var keys []string
		if e.Key != "" {
			keys = []string{e.Key}
		} else {
			keys = hw.watchedKeys()
		}
		q := coord.Quarantine{Reason: e.Reason, Event: e.Event, XID: e.XID}
		if e.UntilSeen {
			q.Return = coord.ReturnSeen
		}
		if st, err := coord.OpenState(g.stateFile, hw.log); err != nil {
			log.WithError(err).Error("could not quarantine the device")
		} else {
			for _, k := range keys {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := st.QuarantineDevice(ctx, g.resource, k, q); err != nil {
					log.WithError(err).Error("could not quarantine the device")
				}
				cancel()
			}
		}
	}
	if !mine {
		log.Warn("critical device event on another worker's device: quarantined host-wide: " + e.Reason)
		return
	}
	hw.tell(g, e)
	hw.reportEvent(g, e)
	if g.action == params.HealthNotify {
		log.Error("critical device event on this worker's device (health.action notify: the worker keeps running, told in " + hw.file + "): " + e.Reason)
		return
	}
	log.Error("critical device event on this worker's device: stopping the worker so that it is replaced on a healthy one (health.action replace): " + e.Reason)
	hw.replace(e.Reason)
}

// watchedKeys are the devices the running watches cover.
func (hw *healthWatch) watchedKeys() []string {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	var keys []string
	for _, w := range hw.ws {
		keys = append(keys, w.Watched()...)
	}
	return keys
}

// tell appends the event to the worker's health file.
func (hw *healthWatch) tell(g watchedGrant, e driver.DeviceEvent) {
	if hw.file == "" {
		return
	}
	f, err := os.OpenFile(hw.file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = fmt.Fprintf(f, "%s %s %s action=%s: %s\n", e.Time.UTC().Format(time.RFC3339Nano), g.resource, e.Key, g.action, e.Reason)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		hw.log.WithError(err).Warn("could not write the GPU health file")
	}
}

// reportEvent tells the application master of a critical event on the
// worker's device, in the background (stop waits for it, bounded by
// reportTimeout): the replacement is not delayed by the report.
func (hw *healthWatch) reportEvent(g watchedGrant, e driver.DeviceEvent) {
	if hw.send == nil {
		return
	}
	body, err := json.Marshal(contract.DeviceReport{Container: hw.container, Seq: nextReportSeq(), Health: []contract.HealthEvent{{
		Resource: g.resource, Device: e.Key, Event: e.Event, XID: e.XID, Reason: e.Reason, Action: g.action, Time: e.Time}}})
	if err != nil {
		hw.log.WithError(err).Warn("could not report the device event to the application master")
		return
	}
	hw.wg.Add(1)
	go func() {
		defer hw.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
		defer cancel()
		if err := hw.send(ctx, body); err != nil {
			hw.log.WithError(err).Warn("could not report the device event to the application master")
		}
	}()
}

// replace ends the worker's process group: SIGTERM, SIGKILL after
// killGrace (once).
func (hw *healthWatch) replace(reason string) {
	hw.mu.Lock()
	if hw.reason != "" {
		hw.mu.Unlock()
		return
	}
	hw.reason = reason
	pgid, stopWorkers := hw.pgid, hw.stopWorkers
	hw.mu.Unlock()
	if stopWorkers != nil {
		stopWorkers() // the supervisor's SIGTERM, SIGKILL after the grace period
		return
	}
	if pgid <= 0 {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	// SIGKILL after the grace period unless the worker has ended by then
	// (stop cancels it: its group id may name another group later).
	hw.mu.Lock()
	if !hw.done {
		hw.kill = time.AfterFunc(killGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	}
	hw.mu.Unlock()
}

// replaced is the reason the watch ended the worker ("" when it did not).
func (hw *healthWatch) replaced() string {
	if hw == nil {
		return ""
	}
	hw.mu.Lock()
	defer hw.mu.Unlock()
	return hw.reason
}

// stop ends the watch (its context should be done already, so that a
// start still waiting for its helper gives up) and waits for it.
func (hw *healthWatch) stop() {
	if hw == nil {
		return
	}
	hw.mu.Lock()
	hw.done = true
	ws := hw.ws
	if hw.kill != nil {
		hw.kill.Stop()
	}
	hw.mu.Unlock()
	for _, w := range ws {
		w.Stop()
	}
	hw.wg.Wait()
}

// healthFile is the worker's health file path in dir.
func healthFile(dir string) string { return absPath(filepath.Join(dir, GPUHealthFileName)) }

// errGPUFailed is the launcher's error when the watch ended the worker.
func errGPUFailed(reason string) error {
	return classifyf(ErrGPUFailed, "a GPU of this worker failed while it ran (%s); the worker was stopped to be replaced on a healthy GPU, and the GPU is quarantined on this host (docs/gpu-health.md)", reason)
}
