package launch

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources/contract"
)

// nvmlHelperName is the NVML helper's file name (driver/gpu.NVMLHelperName:
// the launcher may not import the driver; a test holds them equal).
const nvmlHelperName = "xres-nvml"

// maxSampleLine bounds a line of the sampler's output.
const maxSampleLine = 64 << 10

// gpuSampler runs "xres-nvml sample" while the worker runs and relays each
// line of samples to the AM as a samples report (contract.DeviceReport.GPU).
// Sampling is the helper's; the launcher only relays.
type gpuSampler struct {
	helper    string   // xres-nvml's path
	gpus      []string // the parent GPU indices
	interval  time.Duration
	container string
	send      func(ctx context.Context, body []byte) error
	log       logrus.FieldLogger
	sent      func(bytes int) // after each report sent (tests); nil: none
	done      chan struct{}   // closed when run has returned (its helper waited for)
}

// newGPUSampler is the sampler of grants' NVIDIA GPUs, nil when there is
// none, sampling is off (interval 0) or xres-nvml is not found (logged).
func newGPUSampler(grants []Grant, interval time.Duration, container string, getenv func(string) string, log logrus.FieldLogger,
	send func(ctx context.Context, body []byte) error) *gpuSampler {
	if interval <= 0 || container == "" {
		return nil
	}
	gpus := nvidiaIndices(grants)
	if len(gpus) == 0 {
		return nil
	}
	helper, _, err := driver.FindHelper(nvmlHelperName, getenv)
	if err != nil {
		log.WithError(err).Info("GPU sampling off: " + nvmlHelperName + " not found beside the launcher or on PATH")
		return nil
	}
	return &gpuSampler{helper: helper, gpus: gpus, interval: interval, container: container, send: send, log: log, done: make(chan struct{})}
}

// nvidiaIndices are the indices of grants' NVIDIA devices; a MIG instance
// ("0:1") is sampled as its GPU, once.
func nvidiaIndices(grants []Grant) []string {
	var out []string
	seen := map[string]bool{}
	for _, g := range grants {
		if g.VendorName() != "nvidia" {
			continue
		}
		for _, d := range g.Devices {
			i, ok := d.Property("index")
			if !ok {
				continue
			}
			i, _, _ = strings.Cut(i, ":")
			if _, err := strconv.Atoi(i); err != nil || seen[i] {
				continue
			}
			seen[i] = true
			out = append(out, i)
		}
	}
	return out
}

// run samples until ctx ends (the worker ended) or the helper stops.
func (s *gpuSampler) run(ctx context.Context) {
	defer close(s.done)
	cmd := exec.CommandContext(ctx, s.helper, "sample", "--interval", s.interval.String(), "--gpus", strings.Join(s.gpus, ","))
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.log.WithError(err).Warn("GPU sampling off")
		return
	}
	if err := cmd.Start(); err != nil {
		s.log.WithError(err).Warn("GPU sampling off: cannot start " + s.helper)
		return
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 4096), maxSampleLine)
	failing := false
	for sc.Scan() {
		var samples []contract.GPUSample
		if err := json.Unmarshal(sc.Bytes(), &samples); err != nil || len(samples) == 0 {
			s.log.WithField("line", truncate(sc.Text(), 200)).Warn("GPU sampler printed a line that is no samples; skipped")
			continue
		}
		body, err := json.Marshal(contract.DeviceReport{Container: s.container, Seq: nextReportSeq(), GPU: samples})
		if err != nil {
			continue
		}
		err = s.send(ctx, body)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			s.log.WithError(err).Warn("could not send GPU samples to the application master; retrying with the next")
			failing = true
		case err == nil:
			failing = false
			if s.sent != nil {
				s.sent(len(body))
			}
		}
	}
	_ = cmd.Wait()
	if ctx.Err() == nil {
		s.log.WithField("helper_said", strings.TrimSpace(stderr.String())).Warn("GPU sampler stopped while the worker runs")
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w interface{ WriteString(string) (int, error) }
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.WriteString(string(p[:k]))
		l.n -= k
	}
	return len(p), nil
}

// wait waits, at most d, for run to end once its context has (the helper
// killed and waited for); a sampler never started is not waited for.
func (s *gpuSampler) wait(started bool, d time.Duration) {
	if s == nil || !started {
		return
	}
	select {
	case <-s.done:
	case <-time.After(d):
	}
}

// metricsInterval reads xres.metrics.interval.
func metricsInterval(cfg *conf.Config) (time.Duration, error) {
	d, err := cfg.Duration(conf.MetricsInterval)
	if err != nil {
		return 0, err
	}
	return d, nil
}

// observeWorkers writes the job-mapping files and starts the GPU sampler
// for workers about to run on res (the per-device mode: its workers start
// and restart under the supervisor); stop ends the sampler, waits for it,
// and removes the files.
func (l *Launcher) observeWorkers(ctx context.Context, res *Reservation, env Env, log logrus.FieldLogger) (stop func()) {
	container := env.Getenv(EnvContainerID)
	jobs := writeJobMapping(res.Grants, container, log)
	var sampler *gpuSampler
	if url := env.Getenv(contract.EnvReportURL); url != "" {
		sampler = newGPUSampler(res.Grants, l.MetricsInterval, container, env.Getenv, log, func(ctx context.Context, body []byte) error {
			cctx, cancel := context.WithTimeout(ctx, reportTimeout)
			defer cancel()
			return signAndSend(cctx, env.HTTP, url, env.Getenv(EnvTokenFile), body)
		})
	}
	sctx, cancel := context.WithCancel(ctx)
	if sampler != nil {
		go sampler.run(sctx)
	}
	return func() {
		cancel()
		sampler.wait(sampler != nil, time.Second)
		jobs.remove()
	}
}
