package launch

import (
	"bytes"
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/resources/params"
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

// Rescale is xres.rescale.* (params.Rescale, which am checks too).
type Rescale = params.Rescale

// DefaultRescaleInterval is xres.rescale.interval's default.
const DefaultRescaleInterval = time.Second

// rescaleSettings reads xres.rescale.signal and xres.rescale.interval
// (params.ReadRescale).
func rescaleSettings(cfg *conf.Config) (Rescale, error) { return params.ReadRescale(cfg) }

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
	if code != 200 {
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
