package gpu

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// Built-in discovery errors.
var (
	// ErrNoGPUSource: neither the NVIDIA library (NVML) nor nvidia-smi is
	// available on the host.
	ErrNoGPUSource = errors.New("no GPU discovery source: neither NVML nor nvidia-smi is available")
	// ErrNvidiaSMI: nvidia-smi ran but failed or printed something that is
	// not the queried CSV.
	ErrNvidiaSMI = errors.New("nvidia-smi failed")
)

// smiFields are the fields DESIGN.md's query asks for ("GPU discovery
// sources"); smiHealthFields are added to the same query, so that one
// nvidia-smi run also tells MIG mode and pending page retirement. An
// nvidia-smi too old to know them is asked the base query again.
var (
	smiFields       = []string{"index", "uuid", "name", "memory.total", "pci.bus_id"}
	smiHealthFields = []string{"mig.mode.current", "retired_pages.pending"}
)

// smiQuery is the exact base query.
var smiQuery = queryArgs(smiFields)

func queryArgs(fields []string) []string {
	return []string{"--query-gpu=" + strings.Join(fields, ","), "--format=csv,noheader"}
}

// smiRemapQuery asks for row-remapping state (Ampere and later); older
// GPUs or drivers answer with an error or nothing, which tells nothing.
var smiRemapQuery = []string{"--query-remapped-rows=gpu_uuid,remapped_rows.pending,remapped_rows.failure", "--format=csv,noheader"}

// smiListArgs lists GPUs and their MIG instances.
var smiListArgs = []string{"-L"}

// smiEnumerator lists GPUs (or their MIG instances) with nvidia-smi.
type smiEnumerator struct {
	path    string // resolved executable
	timeout time.Duration
	units   unitOptions
	log     logrus.FieldLogger
}

var _ driver.Enumerator = (*smiEnumerator)(nil)

// Enumerate implements driver.Enumerator: one --query-gpu run (base and
// health fields), when health checks are on --query-remapped-rows beside
// it (run at the same time: each nvidia-smi start costs the launch), and,
// when a MIG strategy is set and a GPU is in MIG mode, -L.
func (e *smiEnumerator) Enumerate(ctx context.Context) ([]driver.Device, error) {
	log := driver.LoggerOrDiscard(e.log)
	var remap chan remapResult
	if e.units.health {
		remap = make(chan remapResult, 1)
		go func() {
			out, err := e.run(ctx, smiRemapQuery)
			remap <- remapResult{out, err}
		}()
	}
	fields := append(append([]string(nil), smiFields...), smiHealthFields...)
	out, err := e.run(ctx, queryArgs(fields))
	if err != nil && errors.Is(err, errSMIUnknownField) {
		log.WithError(err).Warn("nvidia-smi does not know the MIG and health fields; GPUs are listed without them")
		fields = smiFields
		out, err = e.run(ctx, queryArgs(fields))
	}
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, nil // "No devices were found"
	}
	gpus, err := parseSMIQuery(out, fields)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", e.path, err)
	}
	if remap != nil {
		r := <-remap
		addRemapHealth(r.out, r.err, gpus, log)
	}
	if e.units.wantMIG() && anyMIG(gpus) {
		out, err := e.run(ctx, smiListArgs)
		if err != nil {
			return nil, err
		}
		if err := attachSMIList(gpus, out); err != nil {
			return nil, fmt.Errorf("run %s -L: %w", e.path, err)
		}
	}
	return selectUnits(gpus, e.units, log)
}

// errSMIUnknownField: nvidia-smi rejected a --query-gpu field.
var errSMIUnknownField = errors.New("nvidia-smi does not know a queried field")

// run runs nvidia-smi with args and returns its stdout; nil, nil when it
// says there are no devices.
func (e *smiEnumerator) run(ctx context.Context, args []string) ([]byte, error) {
	timeout := e.timeout
	if timeout <= 0 {
		timeout = driver.DefaultTimeout
	}
	res, err := run(ctx, e.path, args, nil, timeout)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", e.path, err)
	}
	if res.timedOut {
		return nil, fmt.Errorf("run %s: %w: timed out after %s", e.path, ErrNvidiaSMI, timeout)
	}
	if res.exitCode != 0 {
		text := strings.TrimSpace(string(res.stdout) + "\n" + string(res.stderr))
		if isNoDevices(text) {
			return nil, nil
		}
		if strings.Contains(text, "is not a valid field to query") {
			return nil, fmt.Errorf("run %s: %w: %s", e.path, errSMIUnknownField, clip(text, 200))
		}
		return nil, fmt.Errorf("run %s: %w with exit code %d: %s", e.path, ErrNvidiaSMI, res.exitCode, clip(text, 512))
	}
	if isNoDevices(string(res.stdout)) {
		return nil, nil
	}
	return res.stdout, nil
}

// remapResult is the outcome of the --query-remapped-rows run.
type remapResult struct {
	out []byte
	err error
}

// addRemapHealth adds the row-remapping verdicts of --query-remapped-rows
// (out, or its error err) to the GPUs, by uuid. A failing query (an older
// GPU or driver) is logged and tells nothing.
func addRemapHealth(out []byte, err error, gpus []gpuRecord, log logrus.FieldLogger) {
	if err != nil {
		log.WithError(err).Debug("nvidia-smi: no row-remapping state")
		return
	}
	byUUID, err := ParseSMIRemappedRows(out)
	if err != nil {
		log.WithError(err).Warn("nvidia-smi: row-remapping state unreadable; not checked")
		return
	}
	for i := range gpus {
		if why := byUUID[gpus[i].info["uuid"]]; why != "" {
			gpus[i].unhealthy = append(gpus[i].unhealthy, why)
		}
	}
}

func anyMIG(gpus []gpuRecord) bool {
	for _, g := range gpus {
		if g.migMode {
			return true
		}
	}
	return false
}

func isNoDevices(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), "No devices were found")
}

// smiFailures are texts nvidia-smi prints (to stdout) instead of the CSV.
var smiFailures = []string{
	"NVIDIA-SMI has failed",
	"Failed to initialize NVML",
	"Unable to determine the device handle",
	"Driver/library version mismatch",
	"Insufficient Permissions",
}

// ParseSMI parses the output of
//
//	nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id --format=csv,noheader
//
// one GPU a line, e.g. "0, GPU-8b6f…, NVIDIA H100 80GB HBM3, 81559 MiB,
// 00000000:18:00.0". Fields are trimmed; memory is reported in MiB
// ("[N/A]" leaves it out). The device key is the UUID, else the PCI bus id,
// else the index. "No devices were found" is zero GPUs; nvidia-smi's failure
// texts and malformed lines are errors naming the line.
func ParseSMI(out []byte) ([]driver.Device, error) {
	gpus, err := parseSMIQuery(out, smiFields)
	if err != nil {
		return nil, err
	}
	devs := make([]driver.Device, len(gpus))
	for i, g := range gpus {
		devs[i] = driver.Device{Key: g.key, Info: g.info}
	}
	return devs, nil
}

// ParseSMIHealth parses the output of the query with the MIG and health
// fields (index, uuid, name, memory.total, pci.bus_id, mig.mode.current,
// retired_pages.pending) into devices, an unhealthy one marked with why.
func ParseSMIHealth(out []byte) ([]driver.Device, error) {
	gpus, err := parseSMIQuery(out, append(append([]string(nil), smiFields...), smiHealthFields...))
	if err != nil {
		return nil, err
	}
	devs := make([]driver.Device, len(gpus))
	for i, g := range gpus {
		devs[i] = driver.Device{Key: g.key, Info: g.info, Unhealthy: strings.Join(g.unhealthy, "; ")}
	}
	return devs, nil
}

// parseSMIQuery parses --query-gpu=<fields> --format=csv,noheader output;
// fields starts with smiFields and may go on with smiHealthFields.
func parseSMIQuery(out []byte, fields []string) ([]gpuRecord, error) {
	text := strings.TrimSpace(strings.ReplaceAll(string(out), "\r\n", "\n"))
	if text == "" || isNoDevices(text) {
		return nil, nil
	}
	var gpus []gpuRecord
	seenIndex := map[string]bool{}
	seenKey := map[string]bool{}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		for _, f := range smiFailures {
			if strings.Contains(line, f) {
				return nil, fmt.Errorf("%w: %s", ErrNvidiaSMI, clip(text, 512))
			}
		}
		vals := strings.Split(line, ",")
		if len(vals) != len(fields) {
			return nil, fmt.Errorf("%w: output line %d: want %d comma-separated fields (%s), got %d: %q",
				ErrNvidiaSMI, n+1, len(fields), strings.Join(fields, ", "), len(vals), clip(line, 200))
		}
		for i := range vals {
			vals[i] = strings.TrimSpace(vals[i])
		}
		index, uuid, name, mem, bus := vals[0], vals[1], vals[2], vals[3], vals[4]
		if _, err := strconv.ParseUint(index, 10, 32); err != nil {
			return nil, fmt.Errorf("%w: output line %d: index %q is not a number", ErrNvidiaSMI, n+1, clip(index, 40))
		}
		if seenIndex[index] {
			return nil, fmt.Errorf("%w: output line %d: index %s listed twice", ErrNvidiaSMI, n+1, index)
		}
		seenIndex[index] = true
		info := resources.Properties{"index": index}
		if known(uuid) {
			info["uuid"] = uuid
		}
		if known(name) {
			info["name"] = name
		}
		if known(mem) {
			mib, err := parseMiB(mem)
			if err != nil {
				return nil, fmt.Errorf("%w: output line %d: memory.total: %v", ErrNvidiaSMI, n+1, err)
			}
			info["memory.total"] = strconv.FormatUint(mib, 10)
		}
		if known(bus) {
			info["pci.bus-id"] = bus
		}
		g := gpuRecord{key: deviceKey(info), info: info}
		for i := len(smiFields); i < len(fields); i++ {
			v := vals[i]
			switch fields[i] {
			case "mig.mode.current":
				on, ok, err := parseSMIFlag(v)
				if err != nil {
					return nil, fmt.Errorf("%w: output line %d: mig.mode.current: %v", ErrNvidiaSMI, n+1, err)
				}
				g.migMode = ok && on
			case "retired_pages.pending":
				on, ok, err := parseSMIFlag(v)
				if err != nil {
					return nil, fmt.Errorf("%w: output line %d: retired_pages.pending: %v", ErrNvidiaSMI, n+1, err)
				}
				if ok && on {
					g.unhealthy = append(g.unhealthy, ReasonRetiredPagesPending)
				}
			}
		}
		if seenKey[g.key] {
			return nil, fmt.Errorf("%w: output line %d: device %s listed twice", ErrNvidiaSMI, n+1, g.key)
		}
		seenKey[g.key] = true
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// parseSMIFlag reads a yes/no field: "Yes", "Enabled", "1", "True" are on;
// "No", "Disabled", "0", "False" off; "[N/A]", "[Not Supported]", "N/A"
// or empty are unknown (ok false). Anything else is an error.
func parseSMIFlag(v string) (on, ok bool, err error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "yes", "enabled", "1", "true":
		return true, true, nil
	case "no", "disabled", "0", "false":
		return false, true, nil
	case "", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "[insufficient permissions]":
		return false, false, nil
	}
	if strings.HasPrefix(v, "[") {
		return false, false, nil
	}
	return false, false, fmt.Errorf("%q is neither yes nor no", clip(v, 40))
}

// ParseSMIRemappedRows parses
//
//	nvidia-smi --query-remapped-rows=gpu_uuid,remapped_rows.pending,remapped_rows.failure --format=csv,noheader
//
// into why each GPU (by uuid) must not be used: ReasonRowRemapFailed or
// ReasonRowRemapPending; healthy and unknown GPUs are absent.
func ParseSMIRemappedRows(out []byte) (map[string]string, error) {
	text := strings.TrimSpace(strings.ReplaceAll(string(out), "\r\n", "\n"))
	why := map[string]string{}
	if text == "" || isNoDevices(text) {
		return why, nil
	}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		vals := strings.Split(line, ",")
		if len(vals) != 3 {
			return nil, fmt.Errorf("%w: remapped-rows line %d: want 3 comma-separated fields (gpu_uuid, remapped_rows.pending, remapped_rows.failure), got %d: %q",
				ErrNvidiaSMI, n+1, len(vals), clip(line, 200))
		}
		uuid := strings.TrimSpace(vals[0])
		pending, _, err := parseSMIFlag(vals[1])
		if err != nil {
			return nil, fmt.Errorf("%w: remapped-rows line %d: remapped_rows.pending: %v", ErrNvidiaSMI, n+1, err)
		}
		failed, _, err := parseSMIFlag(vals[2])
		if err != nil {
			return nil, fmt.Errorf("%w: remapped-rows line %d: remapped_rows.failure: %v", ErrNvidiaSMI, n+1, err)
		}
		switch {
		case failed:
			why[uuid] = ReasonRowRemapFailed
		case pending:
			why[uuid] = ReasonRowRemapPending
		}
	}
	return why, nil
}

// deviceKey picks the host-wide identity: UUID, else PCI bus id, else index.
func deviceKey(info resources.Properties) string {
	if u := info["uuid"]; u != "" {
		return u
	}
	if b := info["pci.bus-id"]; b != "" {
		return "pci:" + b
	}
	return "index:" + info["index"]
}

// known reports whether an nvidia-smi field carries a value.
func known(v string) bool {
	return v != "" && !strings.HasPrefix(v, "[") // "[N/A]", "[Not Supported]"
}

// parseMiB reads "81559 MiB" (also GiB, KiB, and a bare number as MiB).
func parseMiB(s string) (uint64, error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), " ")
	unit = strings.TrimSpace(unit)
	if unit == "" {
		// "81559MiB"
		i := strings.IndexFunc(num, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i > 0 {
			num, unit = num[:i], num[i:]
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a size", clip(s, 40))
	}
	switch strings.ToLower(unit) {
	case "", "mib", "mb":
		return uint64(v), nil
	case "gib", "gb":
		return uint64(v * 1024), nil
	case "kib", "kb":
		return uint64(v / 1024), nil
	case "b":
		return uint64(v / (1 << 20)), nil
	default:
		return 0, fmt.Errorf("%q has unknown unit %q", clip(s, 40), unit)
	}
}
