package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/resources/contract"
)

// sampleMode is the first argument that selects the sampling mode:
//
//	xres-nvml sample --interval 10s --gpus 0,1 [--library PATH] [--count N]
//
// While the worker runs, the container-launcher runs it and relays each
// line it prints to the AM: every interval one JSON array of
// contract.GPUSample, one per GPU asked for (utilisation, memory used,
// power, temperature, XID errors counted since it started). It ends when
// killed, when stdout is closed, or after --count lines.
const sampleMode = "sample"

// gpuReader reads the GPUs' figures: NVML (sample_nvml.go), or a fake.
type gpuReader interface {
	// Read returns one sample per GPU, in the order asked.
	Read(now time.Time) ([]contract.GPUSample, error)
	Close()
}

// openReader opens NVML (library "" = libnvidia-ml.so.1) for gpus.
var openReader func(library string, gpus []int) (gpuReader, error)

// sampleMain is xres-nvml sample.
func sampleMain(args []string, stdout, stderr io.Writer, after func(time.Duration) <-chan time.Time) int {
	fs := flag.NewFlagSet("xres-nvml sample", flag.ContinueOnError)
	fs.SetOutput(stderr)
	interval := fs.Duration("interval", 10*time.Second, "time between samples")
	gpus := fs.String("gpus", "", "the GPU indices to sample, comma-separated")
	lib := fs.String("library", "", "the NVIDIA management library to load (default libnvidia-ml.so.1)")
	count := fs.Int("count", 0, "stop after this many samples (0: never)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	idx, err := parseGPUs(*gpus)
	if err != nil || *interval <= 0 {
		if err == nil {
			err = fmt.Errorf("--interval %s: want a positive duration", *interval)
		}
		fmt.Fprintf(stderr, "xres-nvml sample: %v\n", err)
		return 2
	}
	if openReader == nil {
		fmt.Fprintln(stderr, "xres-nvml sample: NVML unavailable: built without cgo")
		return 3
	}
	r, err := openReader(*lib, idx)
	if err != nil {
		fmt.Fprintf(stderr, "xres-nvml sample: %v\n", err)
		return 3
	}
	defer r.Close()
	return sampleLoop(r, *interval, *count, stdout, stderr, after)
}

// sampleLoop prints a line of samples at once, then every interval.
func sampleLoop(r gpuReader, interval time.Duration, count int, stdout, stderr io.Writer, after func(time.Duration) <-chan time.Time) int {
	w := bufio.NewWriter(stdout)
	for n := 0; count == 0 || n < count; n++ {
		if n > 0 {
			<-after(interval)
		}
		s, err := r.Read(time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "xres-nvml sample: %v\n", err)
			continue // one bad read is no reason to stop
		}
		b, err := json.Marshal(s)
		if err != nil {
			fmt.Fprintf(stderr, "xres-nvml sample: %v\n", err)
			return 1
		}
		w.Write(append(b, '\n'))
		if err := w.Flush(); err != nil {
			return 0 // the launcher stopped reading: the worker ended
		}
	}
	return 0
}

// parseGPUs reads --gpus: "0,1,3".
func parseGPUs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("--gpus %q: %q is not a GPU index", s, f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--gpus: no GPU index given")
	}
	return out, nil
}
