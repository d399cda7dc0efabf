package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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

// smiQuery is the exact query the built-in fallback runs (DESIGN.md, "GPU
// discovery sources").
var smiQuery = []string{"--query-gpu=index,uuid,name,memory.total,pci.bus_id", "--format=csv,noheader"}

const smiTimeout = 10 * time.Second

// smiEnumerator lists GPUs with nvidia-smi.
type smiEnumerator struct {
	path    string // resolved executable
	timeout time.Duration
}

var _ driver.Enumerator = (*smiEnumerator)(nil)

// Enumerate implements driver.Enumerator.
func (e *smiEnumerator) Enumerate(ctx context.Context) ([]driver.Device, error) {
	res, err := run(ctx, e.path, smiQuery, nil, e.timeout)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", e.path, err)
	}
	if res.timedOut {
		return nil, fmt.Errorf("run %s: %w: timed out after %s", e.path, ErrNvidiaSMI, e.timeout)
	}
	if res.exitCode != 0 {
		text := strings.TrimSpace(string(res.stdout) + "\n" + string(res.stderr))
		if isNoDevices(text) {
			return nil, nil
		}
		return nil, fmt.Errorf("run %s: %w with exit code %d: %s", e.path, ErrNvidiaSMI, res.exitCode, clip(text, 512))
	}
	devs, err := ParseSMI(res.stdout)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", e.path, err)
	}
	return devs, nil
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
	text := strings.TrimSpace(strings.ReplaceAll(string(out), "\r\n", "\n"))
	if text == "" || isNoDevices(text) {
		return nil, nil
	}
	var devs []driver.Device
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
		fields := strings.Split(line, ",")
		if len(fields) != 5 {
			return nil, fmt.Errorf("%w: output line %d: want 5 comma-separated fields (index, uuid, name, memory.total, pci.bus_id), got %d: %q",
				ErrNvidiaSMI, n+1, len(fields), clip(line, 200))
		}
		for i := range fields {
			fields[i] = strings.TrimSpace(fields[i])
		}
		index, uuid, name, mem, bus := fields[0], fields[1], fields[2], fields[3], fields[4]
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
		key := deviceKey(info)
		if seenKey[key] {
			return nil, fmt.Errorf("%w: output line %d: device %s listed twice", ErrNvidiaSMI, n+1, key)
		}
		seenKey[key] = true
		devs = append(devs, driver.Device{Key: key, Info: info})
	}
	return devs, nil
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

// lookPath finds file in the PATH from getenv (exec.LookPath reads the
// process environment, which tests and callers may want to override).
func lookPath(file string, getenv func(string) string) (string, error) {
	if strings.Contains(file, "/") {
		if isExecutable(file) {
			return file, nil
		}
		return "", fmt.Errorf("%s: %w", file, os.ErrNotExist)
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH: %w", file, os.ErrNotExist)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
