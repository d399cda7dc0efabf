package launch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/launch/launchcmd"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
)

// --per-device: one worker per device.
//
//	container-launcher --per-device[=NAME] [--on-failure stop|restart]
//	                   [--max-restarts N] [--restart-delay D] [--pin-cpus=false]
//	                   [flags] -- <worker> [args…]
//
// The launcher discovers every selected resource as usual, then starts one
// worker per device of the per-device resource (NAME; without a name, the
// first selected resource, in external-resources order, that has a
// driver-factory.class). Worker i of n is told:
//
//	XRES_RESOURCES_FILE          its own info file: the per-device resource
//	                             with its one device; every other selected
//	                             resource in full (shared by all workers)
//	XRES_RESOURCE_<NAME>_*       as usual, for its one device (AMOUNT=1)
//	the vendor's variables       its one device (driver.VendorReporter)
//	XRES_DEVICE_RESOURCE         the per-device resource's name
//	XRES_DEVICE_RANK             i, 0…n-1 in discovery order
//	XRES_DEVICE_COUNT            n
//	XRES_DEVICE_CPUS             the CPUs it is pinned to ("" when unpinned)
//	XRES_DEVICE_RESTARTS         how often this rank was restarted (0 first)
//
// Pinning happens without a window: the launcher starts itself again as
// `container-launcher __exec-pinned <cpus> <path> <argv…>`, which sets its
// own thread's affinity (sched_setaffinity) and execs the worker, so the
// worker's first instruction and every thread it creates already run on
// those CPUs. Setting the affinity of the started child from outside would
// leave a window in which the worker could create threads that keep the
// old mask (affinity is per thread); that is only the fallback when the
// launcher cannot find its own executable.
//
// Failure: with --on-failure stop (default) a worker that exits non-zero
// (or dies of a signal) stops all the others (SIGTERM to each process
// group, SIGKILL after the grace period) and its exit code becomes the
// launcher's; workers that exit 0 are simply done. With --on-failure
// restart a failing worker is started again on the same device (same rank,
// same info file) after --restart-delay, up to --max-restarts times per
// rank; one more failure stops all. A signal to the launcher is forwarded
// to every worker's group and nothing is restarted after it. The devices
// are released when the last worker has ended.
//
// Every flag has an environment default (perDeviceEnv: XRES_PER_DEVICE,
// XRES_ON_FAILURE, …) for launchers an ApplicationMaster starts.
const (
	EnvDeviceResource = "XRES_DEVICE_RESOURCE"
	EnvDeviceRank     = "XRES_DEVICE_RANK"
	EnvDeviceCount    = "XRES_DEVICE_COUNT"
	EnvDeviceCPUs     = "XRES_DEVICE_CPUS"
	EnvDeviceRestarts = "XRES_DEVICE_RESTARTS"
)

// pinExecCommand is the hidden subcommand through which the launcher
// starts a pinned worker: __exec-pinned <cpu list> <path> <argv0> [args…].
const pinExecCommand = launchcmd.PinExecName

// Failure policies of --on-failure.
const (
	OnFailureStop    = "stop"
	OnFailureRestart = "restart"
)

// perDeviceFlag is --per-device, bare or with a resource name.
type perDeviceFlag struct {
	set  bool
	name string
}

func (f *perDeviceFlag) String() string {
	if f == nil || !f.set {
		return "false"
	}
	if f.name == "" {
		return "true"
	}
	return f.name
}

func (f *perDeviceFlag) Set(v string) error {
	switch v {
	case "true":
		f.set, f.name = true, ""
	case "false":
		f.set, f.name = false, ""
	default:
		if strings.TrimSpace(v) == "" {
			return errors.New("empty resource name")
		}
		f.set, f.name = true, strings.TrimSpace(v)
	}
	return nil
}

func (f *perDeviceFlag) IsBoolFlag() bool { return true }

// perDeviceOptions are the --per-device flags.
type perDeviceOptions struct {
	device       perDeviceFlag
	onFailure    string
	maxRestarts  int
	restartDelay time.Duration
	pin          bool
}

func (o *perDeviceOptions) register(fs *flag.FlagSet) {
	fs.Var(&o.device, "per-device", "one worker per device of this resource (bare: the first with a driver)")
	fs.StringVar(&o.onFailure, "on-failure", OnFailureStop, "per-device: stop or restart when a worker fails")
	fs.IntVar(&o.maxRestarts, "max-restarts", 3, "per-device: restarts per device with --on-failure restart")
	fs.DurationVar(&o.restartDelay, "restart-delay", time.Second, "per-device: pause before a restart")
	fs.BoolVar(&o.pin, "pin-cpus", true, "per-device: pin each worker to its device's local CPUs")
}

// Environment defaults of the --per-device flags, so that a launcher
// started by an ApplicationMaster, which passes no such flags, can be
// switched through the worker environment
// (containerized.taskmanager.env.XRES_PER_DEVICE: gpu). A flag on the
// command line wins.
var perDeviceEnv = []struct{ flag, env string }{
	{"per-device", "XRES_PER_DEVICE"},
	{"on-failure", "XRES_ON_FAILURE"},
	{"max-restarts", "XRES_MAX_RESTARTS"},
	{"restart-delay", "XRES_RESTART_DELAY"},
	{"pin-cpus", "XRES_PIN_CPUS"},
}

// fromEnv sets the flags of fs that the command line left alone from
// their environment variables, recording each in given (flag name -> how
// it was set: "--flag" or the variable's name). A malformed value is a
// usage error naming the variable.
func (o *perDeviceOptions) fromEnv(fs *flag.FlagSet, getenv func(string) string, given map[string]string) error {
	for _, e := range perDeviceEnv {
		if _, ok := given[e.flag]; ok {
			continue
		}
		v := strings.TrimSpace(getenv(e.env))
		if v == "" {
			continue
		}
		if err := fs.Set(e.flag, v); err != nil {
			return classifyf(ErrUsage, "%s=%q (default of --%s): %w", e.env, v, e.flag, err)
		}
		given[e.flag] = e.env
	}
	return nil
}

// validate checks the flag combination; given names the flags that were
// set, and how (see fromEnv).
func (o *perDeviceOptions) validate(given map[string]string) error {
	// Flags that make no sense together are errors; variables are only
	// defaults and may be set for launches they do not concern.
	if !o.device.set {
		for _, f := range []string{"on-failure", "max-restarts", "restart-delay", "pin-cpus"} {
			if how := given[f]; strings.HasPrefix(how, "--") {
				return classifyf(ErrUsage, "%s needs --per-device", how)
			}
		}
		return nil
	}
	switch o.onFailure {
	case OnFailureStop:
		if how := given["max-restarts"]; strings.HasPrefix(how, "--") {
			return classifyf(ErrUsage, "%s needs --on-failure %s", how, OnFailureRestart)
		}
		o.maxRestarts = 0
	case OnFailureRestart:
		if o.maxRestarts < 0 {
			return classifyf(ErrUsage, "%s %d: must be 0 or more", given["max-restarts"], o.maxRestarts)
		}
	default:
		return classifyf(ErrUsage, "%s %q: want %s or %s", given["on-failure"], o.onFailure, OnFailureStop, OnFailureRestart)
	}
	if o.restartDelay < 0 {
		return classifyf(ErrUsage, "%s %s: must not be negative", given["restart-delay"], o.restartDelay)
	}
	return nil
}

// chooseDeviceSpec picks the per-device resource among the selected specs.
func chooseDeviceSpec(specs []resources.Spec, name string) (resources.Spec, error) {
	hasDriver := func(s resources.Spec) bool { return strings.TrimSpace(s.Factory) != "" }
	if name != "" {
		for _, s := range specs {
			if s.Name != name {
				continue
			}
			if !hasDriver(s) {
				return s, classifyf(ErrConfig, "--per-device %s: external-resource.%s.driver-factory.class is not set, so no devices are discovered for it", name, name)
			}
			return s, nil
		}
		var names []string
		for _, s := range specs {
			names = append(names, s.Name)
		}
		list := "none"
		if len(names) > 0 {
			list = strings.Join(names, ", ")
		}
		return resources.Spec{}, classifyf(ErrConfig, "--per-device %s: not a selected resource (selected: %s)", name, list)
	}
	for _, s := range specs {
		if hasDriver(s) {
			return s, nil
		}
	}
	return resources.Spec{}, classifyf(ErrConfig, "--per-device: no selected resource has a driver-factory.class (external-resources and --resources)")
}

// deviceWorker is one --per-device worker: its rank, command, environment
// and CPUs.
type deviceWorker struct {
	rank     int
	device   string // how logs name its device
	path     string // resolved program
	args     []string
	env      []string
	cpus     []int     // nil: unpinned
	mem      memPolicy // zero: the default memory policy
	restarts int
}

// supervisor runs the --per-device workers.
type supervisor struct {
	gate         *signalGate
	log          logrus.FieldLogger
	grace        time.Duration
	restart      bool
	maxRestarts  int
	restartDelay time.Duration
	self         string // the launcher's executable for pinned starts; "": pin after start
	dir          string
	stdout       io.Writer
	stderr       io.Writer
}

// command builds the exec.Cmd that starts w: through the launcher's
// __exec-pinned when w is pinned and the launcher's executable is known,
// else w's program directly.
func (s *supervisor) command(w *deviceWorker) *exec.Cmd {
	env := mergeEnv(w.env, map[string]string{EnvDeviceRestarts: strconv.Itoa(w.restarts)})
	cmd := &exec.Cmd{Path: w.path, Args: w.args, Env: env, Dir: s.dir, Stdout: s.stdout, Stderr: s.stderr,
		SysProcAttr: workerSysProcAttr()}
	if len(w.cpus) > 0 && s.self != "" {
		cmd.Path = s.self
		cmd.Args = append([]string{s.self, pinExecCommand, formatCPUList(w.cpus), w.path}, w.args...)
	}
	return cmd
}

// start starts w and returns its process.
func (s *supervisor) start(w *deviceWorker) (*proc, error) {
	cmd := s.command(w)
	var after func(pid int)
	if len(w.cpus) > 0 && s.self == "" {
		after = func(pid int) {
			if err := setAffinity(pid, w.cpus); err != nil {
				s.log.WithError(err).WithField("rank", w.rank).Warn("could not pin the worker to its device's CPUs")
			}
		}
	}
	p, err := startProc(cmd, s.gate, after, memPolicySetup(w.mem, s.log.WithField("rank", w.rank)))
	if err != nil {
		return nil, err
	}
	s.log.WithFields(logrus.Fields{"rank": w.rank, "pid": p.pid, "device": w.device, "cpus": formatCPUList(w.cpus),
		"restarts": w.restarts}).Info("worker started")
	return p, nil
}

type workerExit struct {
	rank int
	pid  int
	code int
}

// run starts every worker and supervises them until all have ended. It
// returns the launcher's exit code: the first failing worker's code (in
// the order they ended), or 0 when all exited 0. An error (classified
// ErrWorkerStart) means a worker could not be started; the others were
// stopped.
func (s *supervisor) run(ctx context.Context, workers []*deviceWorker) (int, error) {
	exits := make(chan workerExit, len(workers))
	restartDue := make(chan int, len(workers))
	running := map[int]int{}        // rank -> pid
	timers := map[int]*time.Timer{} // pending restarts
	failed := map[int]int{}         // rank -> exit code that a pending restart answers
	code, haveCode := 0, false
	var startErr error
	stopping := false
	var killTimer <-chan time.Time
	ctxDone := ctx.Done()

	fail := func(c int) {
		if !haveCode {
			code, haveCode = c, true
		}
	}
	stopAll := func(why string) {
		for rank, t := range timers {
			if t.Stop() {
				delete(timers, rank)
				fail(failed[rank])
			}
		}
		if stopping {
			return
		}
		stopping = true
		if len(running) > 0 {
			s.log.WithField("reason", why).WithField("workers", len(running)).Info("stopping the other workers")
		}
		for _, pid := range running {
			_ = syscall.Kill(-pid, syscall.SIGTERM)
		}
		killTimer = time.After(s.grace)
	}
	// launch starts w; stopped reports that a signal came first (nothing
	// started, all stopping).
	launch := func(w *deviceWorker) (stopped bool) {
		p, err := s.start(w)
		if err != nil {
			if errors.Is(err, errStopped) {
				stopAll("signal")
				return true
			}
			if startErr == nil {
				startErr = classifyf(ErrWorkerStart, "start worker %d (%s): %w", w.rank, w.args[0], err)
			}
			stopAll("a worker could not start")
			return false
		}
		running[w.rank] = p.pid
		go func(rank, pid int) { exits <- workerExit{rank: rank, pid: pid, code: <-p.exited} }(w.rank, p.pid)
		return false
	}

	for _, w := range workers {
		if stopping {
			break
		}
		if launch(w) {
			fail(signalExitCode(s.gate.Stopping()))
		}
	}
	for len(running) > 0 || len(timers) > 0 {
		select {
		case ev := <-exits:
			delete(running, ev.rank)
			w := workers[ev.rank]
			log := s.log.WithFields(logrus.Fields{"rank": ev.rank, "pid": ev.pid, "exit_code": describeCode(ev.code)})
			if ev.code == 0 {
				log.Info("worker ended")
				continue
			}
			if !stopping && s.restart && s.gate.Stopping() == nil && w.restarts < s.maxRestarts {
				w.restarts++
				log.WithField("restart", fmt.Sprintf("%d/%d", w.restarts, s.maxRestarts)).
					WithField("delay", s.restartDelay.String()).Warn("worker failed: restarting it")
				rank := ev.rank
				failed[rank] = ev.code
				timers[rank] = time.AfterFunc(s.restartDelay, func() { restartDue <- rank })
				continue
			}
			if stopping || s.gate.Stopping() != nil {
				log.Info("worker ended")
			} else {
				log.Error("worker failed: stopping all workers")
			}
			fail(ev.code)
			stopAll(fmt.Sprintf("worker %d failed", ev.rank))
		case rank := <-restartDue:
			if _, ok := timers[rank]; !ok {
				continue // cancelled
			}
			delete(timers, rank)
			if stopping {
				fail(failed[rank])
				continue
			}
			if launch(workers[rank]) {
				fail(failed[rank]) // its failure came before the signal
			}
		case <-ctxDone:
			ctxDone = nil
			s.log.Info("launch cancelled: terminating the workers")
			stopAll("cancelled")
		case <-killTimer:
			killTimer = nil
			for rank, pid := range running {
				s.log.WithField("rank", rank).WithField("pid", pid).Warn("worker outlived the grace period: killing")
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	}
	if startErr != nil {
		return 0, startErr
	}
	return code, nil
}

// perDeviceInfoPath is where worker rank's info file goes when --info-file
// names path: "info.json" becomes "info-0.json", "info-1.json", ….
func perDeviceInfoPath(path string, rank int) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-" + strconv.Itoa(rank) + ext
}

// perDeviceInfoName is worker rank's info file name in a YARN container's
// working directory.
func perDeviceInfoName(rank int) string { return perDeviceInfoPath(InfoFileName, rank) }

// runPerDevice writes one info file per device, starts one worker per
// device of the resource named deviceSpec (path: command's program, found
// by the caller) and supervises them. The caller releases res.
func (l *Launcher) runPerDevice(ctx context.Context, res *Reservation, deviceSpec, path string, command []string, env Env, infoFile string, opts perDeviceOptions, gate *signalGate, log logrus.FieldLogger) (int, error) {
	gi := -1
	for i, g := range res.Grants {
		if g.Spec.Name == deviceSpec {
			gi = i
		}
	}
	if gi < 0 || len(res.Grants[gi].Devices) == 0 {
		return 0, classifyf(ErrDiscovery, "--per-device %s: no devices discovered", deviceSpec)
	}
	if url := env.Getenv(contract.EnvReportURL); url != "" {
		if err := postReport(ctx, env.HTTP, url, env.Getenv("LOG_DIRS"), env.Getenv(EnvTokenFile), newReport(env.Getenv(EnvContainerID), res.Grants, 0, env.Started)); err != nil {
			log.WithError(err).Warn("could not report the devices to the application master; starting the workers anyway")
		}
	}
	grant := res.Grants[gi]
	n := len(grant.Devices)
	allowed, allowedErr := allowedCPUs()
	if opts.pin && allowedErr != nil {
		log.WithError(allowedErr).Warn("cannot tell which CPUs the launcher may use: workers run unpinned")
	}
	self := env.Self
	if opts.pin && allowedErr == nil && self == "" {
		exe, err := os.Executable()
		if err != nil {
			log.WithError(err).Warn("cannot find the launcher's executable: pinning each worker right after it started (threads it created before keep all CPUs)")
		}
		self = exe
	}

	workers := make([]*deviceWorker, n)
	for i, dev := range grant.Devices {
		grants := append([]Grant(nil), res.Grants...)
		grants[gi] = Grant{Spec: grant.Spec, Vendor: grant.Vendor, Devices: []resources.Info{dev}}
		infos := infosOf(grants)
		explicit := ""
		if infoFile != "" {
			explicit = perDeviceInfoPath(infoFile, i)
		}
		p, cleanup, err := writeInfo(explicit, env.Dir, perDeviceInfoName(i), env.Getenv, infos)
		if err != nil {
			return 0, err
		}
		defer cleanup()
		wlog := log.WithField("rank", i)
		var cpus []int
		if opts.pin && allowedErr == nil {
			cpus = l.workerCPUs(grant.Spec, dev, allowed, wlog)
		}
		vars := grantEnv(grants, p)
		vars[EnvDeviceResource] = grant.Spec.Name
		vars[EnvDeviceRank] = strconv.Itoa(i)
		vars[EnvDeviceCount] = strconv.Itoa(n)
		vars[EnvDeviceCPUs] = formatCPUList(cpus)
		workers[i] = &deviceWorker{rank: i, device: describeDevices([]resources.Info{dev}), path: path,
			args: command, env: mergeEnv(env.Environ, vars), cpus: cpus,
			mem: grantsMemPolicy([]Grant{{Spec: grant.Spec, Devices: []resources.Info{dev}}}, wlog)}
		wlog.WithField("info_file", p).Debug("info file written")
	}
	s := &supervisor{
		gate: gate, log: log, grace: killGrace,
		restart: opts.onFailure == OnFailureRestart, maxRestarts: opts.maxRestarts, restartDelay: opts.restartDelay,
		self: self, dir: env.Dir, stdout: env.Stdout, stderr: env.Stderr,
	}
	log.WithFields(logrus.Fields{"resource": grant.Spec.Name, "workers": n, "on_failure": opts.onFailure,
		"max_restarts": opts.maxRestarts}).Info("starting one worker per device")
	stopObserving := l.observeWorkers(ctx, res, env, log) // GPU samples, job mapping (sampler.go)
	// The GPU health watch (healthwatch.go): replace stops every worker and
	// the launcher exits 216, so that the AM replaces the container.
	hgrants, err := l.healthGrants(res.Grants)
	if err != nil {
		stopObserving()
		return 0, err
	}
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	hw := newHealthWatch(hgrants, healthFile(env.Dir), log)
	if hw != nil {
		hw.stopWorkers = stopWorkers
		for _, w := range workers {
			w.env = mergeEnv(w.env, map[string]string{EnvGPUHealthFile: hw.file})
		}
		if url := env.Getenv(contract.EnvReportURL); url != "" {
			hw.container, hw.send = env.Getenv(EnvContainerID), func(ctx context.Context, body []byte) error {
				return signAndSend(ctx, env.HTTP, url, env.Getenv(EnvTokenFile), body)
			}
		}
		hw.launch(wctx)
	}
	code, err := s.run(wctx, workers)
	stopWorkers()
	hw.stop()
	stopObserving()
	if err != nil {
		return 0, err
	}
	if reason := hw.replaced(); reason != "" {
		return 0, errGPUFailed(reason)
	}
	log.WithField("exit_code", describeCode(code)).Debug("all workers ended")
	return code, nil
}

// workerCPUs is the CPU set a worker on device dev is pinned to: its local
// CPUs among allowed, nil when unknown or none left (logged).
func (l *Launcher) workerCPUs(spec resources.Spec, dev resources.Info, allowed []int, log logrus.FieldLogger) []int {
	local, src, err := deviceCPUs(spec, dev)
	if errors.Is(err, errNoLocality) {
		log.Debug("the host does not tell the device's local CPUs: worker runs unpinned")
		return nil
	}
	if err != nil {
		log.WithError(err).Warn("unreadable local CPU list: worker runs unpinned")
		return nil
	}
	cpus := intersectCPUs(local, allowed)
	if len(cpus) == 0 {
		log.WithFields(logrus.Fields{"local_cpus": formatCPUList(local), "source": src, "allowed": formatCPUList(allowed)}).
			Warn("none of the device's local CPUs may be used by this launcher: worker runs unpinned")
		return nil
	}
	log.WithFields(logrus.Fields{"cpus": formatCPUList(cpus), "source": src}).Debug("worker pinned to its device's local CPUs")
	return cpus
}

// runExecPinned is the __exec-pinned subcommand: pin, then exec the worker.
// It returns only when that failed.
func runExecPinned(args []string, env Env) int {
	if len(args) < 3 {
		return fail(env.Stderr, classifyf(ErrUsage, "%s: want <cpu list> <path> <argv0> [args…]", pinExecCommand))
	}
	cpus, err := driver.ParseCPUList(args[0])
	if err != nil || len(cpus) == 0 {
		return fail(env.Stderr, classifyf(ErrUsage, "%s: cpu list %q: %v", pinExecCommand, args[0], err))
	}
	if err := execPinned(cpus, args[1], args[2:], os.Environ()); err != nil {
		return fail(env.Stderr, classifyf(ErrWorkerStart, "start pinned worker %q: %w", args[2], err))
	}
	return ExitInternal // not reached: exec replaced the process
}
