package launch

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources/contract"
)

// The rescaling signal of reactive mode: the launcher writes the AM's
// worker counts ($XRES_WORKERS_URL) to $XRES_WORKERS_FILE before the
// worker starts (the AM's JSON as served, a temporary file renamed over
// the old, so a reader never sees half of it). Under scheduler-mode:
// reactive, or with xres.rescale.signal set, it reads them again every
// xres.rescale.interval while the worker runs; when they change it
// rewrites the file first and then sends the signal, if set, to the
// worker's process group. Otherwise it asks once: a thousand workers
// asking every second for counts that never change would be a thousand
// requests a second at the AM for nothing.

// Rescale is xres.rescale.*.
type Rescale struct {
	Signal   syscall.Signal // 0: none, the file alone
	Interval time.Duration  // 0: DefaultRescaleInterval
	// Watch: the counts are read while the worker runs (scheduler-mode:
	// reactive, or a Signal); false: once, before it starts.
	Watch bool
}

// DefaultRescaleInterval is xres.rescale.interval's default.
const DefaultRescaleInterval = time.Second

// rescaleSignals are the signals xres.rescale.signal may name: those a
// worker traps to be told something, never one that stops it.
var rescaleSignals = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "WINCH": syscall.SIGWINCH,
}

// rescaleSettings reads xres.rescale.signal and xres.rescale.interval.
func rescaleSettings(cfg *conf.Config) (Rescale, error) {
	var r Rescale
	interval, err := cfg.Duration(conf.RescaleInterval)
	if err != nil {
		return r, err
	}
	if interval <= 0 {
		return r, fmt.Errorf("%s: %s is not a positive duration", conf.RescaleInterval.Key, interval)
	}
	r.Interval = interval
	mode, _ := cfg.Get(conf.SchedulerMode.Key)
	r.Watch = strings.EqualFold(strings.TrimSpace(mode), "reactive")
	name, err := cfg.String(conf.RescaleSignal)
	if err != nil || strings.TrimSpace(name) == "" {
		return r, err
	}
	r.Signal, err = parseRescaleSignal(name)
	if err != nil {
		return r, fmt.Errorf("%s: %w", conf.RescaleSignal.Key, err)
	}
	r.Watch = true
	return r, nil
}

// parseRescaleSignal reads HUP, SIGHUP, sighup or a number.
func parseRescaleSignal(name string) (syscall.Signal, error) {
	s := strings.ToUpper(strings.TrimSpace(name))
	if sig, ok := rescaleSignals[strings.TrimPrefix(s, "SIG")]; ok {
		return sig, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		for _, sig := range rescaleSignals {
			if int(sig) == n {
				return sig, nil
			}
		}
	}
	return 0, fmt.Errorf("%q is not HUP, USR1, USR2, WINCH or one of their numbers (%d, %d, %d, %d)",
		name, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
}

// workersWatch keeps the worker counts file current.
type workersWatch struct {
	get  GetFunc
	url  string
	path string
	r    Rescale
	log  logrus.FieldLogger
	last []byte // the counts last written
}

// fetch reads the counts once and rewrites the file when they changed;
// changed is false on an error (the file stays as it was).
func (w *workersWatch) fetch(ctx context.Context) (changed bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	code, status, _, body, err := w.get(cctx, w.url, nil)
	if err != nil {
		return false, err
	}
	if code != http.StatusOK {
		return false, fmt.Errorf("GET %s: %s", contract.RedactURL(w.url), status)
	}
	body = bytes.TrimSpace(body)
	if bytes.Equal(body, w.last) {
		return false, nil
	}
	if err := contract.WriteWorkersFile(w.path, append(body, '\n')); err != nil {
		return false, err
	}
	w.last = body
	return true, nil
}

// watch reads the counts every interval until ctx ends; after each change
// it calls notify (the signal to the worker). An AM that does not answer
// is logged once until it answers again.
func (w *workersWatch) watch(ctx context.Context, notify func(syscall.Signal)) {
	interval := w.r.Interval
	if interval <= 0 {
		interval = DefaultRescaleInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := w.fetch(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			if !failing {
				w.log.WithError(err).Warn("could not read the application's worker counts; " + contract.EnvWorkersFile + " stays as it was")
			}
			failing = true
		case changed:
			failing = false
			w.log.WithField("counts", string(w.last)).Info("the application's worker counts changed")
			if w.r.Signal != 0 {
				notify(w.r.Signal)
			}
		default:
			failing = false
		}
	}
}
