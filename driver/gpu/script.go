package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources"
)

// Script-mode errors.
var (
	// ErrScriptFailed: the discovery script exited non-zero (or was killed).
	ErrScriptFailed = errors.New("discovery script failed")
	// ErrScriptTimeout: the discovery script ran past its timeout.
	ErrScriptTimeout = errors.New("discovery script timed out")
	// ErrScriptOutput: the script's first output line is not a list of indices.
	ErrScriptOutput = errors.New("discovery script printed no valid index list")
)

// Protocols a discovery script speaks (param discovery-script.protocol).
const (
	// ProtocolAuto: called as Flink's; the output tells which it speaks
	// (Spark's JSON starts with "{").
	ProtocolAuto = "auto"
	// ProtocolFlink: Flink's, the script picks the devices.
	ProtocolFlink = "flink"
	// ProtocolSpark: Spark's, called without arguments; it lists every
	// device and xres's coordination picks amount of them.
	ProtocolSpark = "spark"
)

// scriptDriver runs a discovery script, in one of two protocols:
//
//	Flink:  <script> <amount> <args…>  → first stdout line "0,1"; exit 0
//	        (the script picks the devices, and coordinates itself if its
//	        args say so)
//	Spark:  <script>                   → stdout {"name":"gpu","addresses":["0","1",…]}; exit 0
//	        (every device of the host; xres's coordination picks amount)
//
// Unlike Flink it passes no literal "null" when discovery-script.args is
// unset, fails when fewer indices than amount come back, and kills the
// script's whole process group on timeout. With ProtocolAuto the script is
// called as Flink's and its output decides.
type scriptDriver struct {
	resource string
	path     string
	args     []string
	protocol string // ProtocolAuto, ProtocolFlink or ProtocolSpark
	timeout  time.Duration
	// nvidia: the indices are NVIDIA GPUs' (visible-devices.vendor unset
	// or nvidia), bounded by the host's GPU count (checkHostIndices):
	// gpusDir ("": nvidiaGPUsDir) lists the GPUs, nvidia-smi (smi, looked
	// up with getenv, within smiTimeout) confirms.
	nvidia     bool
	gpusDir    string
	smi        string
	getenv     func(string) string
	smiTimeout time.Duration
	log        logrus.FieldLogger
	// spark selects among a Spark script's addresses; built on the first
	// Spark output, so a Flink script never opens the coordination state
	// (unless xresCoord).
	spark *sparkSelect
	// xresCoord: coordination.enabled: true was set explicitly for a
	// Flink-protocol script that does not coordinate itself: xres
	// reserves amount among the indices it prints (coordinatedPick).
	xresCoord bool
}

// maxScriptAsk bounds how many devices coordinatedPick asks a script for.
const maxScriptAsk = 1024

var (
	_ driver.Driver   = (*scriptDriver)(nil)
	_ driver.Releaser = (*scriptDriver)(nil)
)

// Discover implements driver.Driver.
func (s *scriptDriver) Discover(ctx context.Context, amount int64) ([]resources.Info, error) {
	if amount <= 0 {
		return nil, fmt.Errorf("discover %s: amount must be positive, got %d", s.resource, amount)
	}
	infos, indices, err := s.discoverOnce(ctx, amount, amount)
	if err != nil || infos != nil || !s.xresCoord {
		return infos, err
	}
	return s.coordinatedPick(ctx, amount, indices)
}

// discoverOnce runs the script once, asking for ask devices (Flink's
// protocol; Spark's takes no amount) and checks its output. A Spark
// output is selected from at once (infos). A Flink output comes back as
// its indices (at least amount), or, unless xresCoord, as the first
// amount of them (infos).
func (s *scriptDriver) discoverOnce(ctx context.Context, amount, ask int64) ([]resources.Info, []string, error) {
	var args []string
	if s.protocol != ProtocolSpark {
		args = append([]string{strconv.FormatInt(ask, 10)}, s.args...)
	}
	start := time.Now()
	res, err := run(ctx, s.path, args, nil, s.timeout)
	if err != nil {
		return nil, nil, fmt.Errorf("run discovery script %s: %w", s.path, err)
	}
	if err := ctx.Err(); err != nil {
		// The caller's deadline or cancellation, not the script timeout.
		return nil, nil, fmt.Errorf("run discovery script %s: %w (its process group was killed)", s.path, err)
	}
	if res.timedOut {
		return nil, nil, fmt.Errorf("run discovery script %s: %w after %s (its process group was killed)%s",
			s.path, ErrScriptTimeout, s.timeout, outputTail(res, args))
	}
	if res.exitCode != 0 {
		how := fmt.Sprintf("exit code %d", res.exitCode)
		if res.exitCode < 0 {
			how = "killed by a signal"
		}
		return nil, nil, fmt.Errorf("run discovery script %s %s: %w: %s%s",
			s.path, conf.RedactArgs(args), ErrScriptFailed, how, outputTail(res, args))
	}
	// An output that is no use names the script, its exit code (0) and
	// what it printed, as a failure does.
	badOutput := func(err error) error {
		return redactOutput(fmt.Errorf("run discovery script %s %s (exit code 0): %w%s", s.path, conf.RedactArgs(args), err, outputTail(res, args)), args)
	}
	if s.protocol == ProtocolSpark || (s.protocol == ProtocolAuto && IsSparkOutput(res.stdout)) {
		addrs, err := ParseSparkScriptOutput(s.resource, res.stdout)
		if err == nil && s.nvidia {
			err = checkNVIDIADevices(addrs)
		}
		if err == nil {
			err = s.checkHostIndices(ctx, addrs)
		}
		if err != nil {
			return nil, nil, badOutput(err)
		}
		s.log.WithFields(logrus.Fields{"resource": s.resource, "script": s.path, "addresses": strings.Join(addrs, ","), "took": time.Since(start)}).
			Debug("discovery script printed Spark's JSON; xres picks among its addresses")
		infos, err := s.spark.discover(ctx, addrs, amount)
		return infos, nil, err
	}
	indices, dups, err := parseScriptOutput(res.stdout)
	if err == nil && s.nvidia {
		err = checkNVIDIADevices(indices)
	}
	if err == nil {
		err = s.checkHostIndices(ctx, indices)
	}
	if err != nil {
		return nil, nil, badOutput(err)
	}
	if int64(len(indices)) < amount {
		distinct := ""
		if len(dups) > 0 {
			distinct = " distinct"
		}
		return nil, nil, badOutput(fmt.Errorf("%w: %d requested, it printed %d%s", driver.ErrNotEnoughDevices, amount, len(indices), distinct))
	}
	if len(dups) > 0 {
		s.log.WithFields(logrus.Fields{"resource": s.resource, "script": s.path, "output": clip(conf.RedactOutput(firstLine(res.stdout), args), 200), "twice": strings.Join(dups, ",")}).
			Warn("discovery script printed an index more than once; counting it once, as Flink does")
	}
	if s.xresCoord {
		return nil, indices, nil
	}
	if int64(len(indices)) > amount {
		// Flink passes every index on; xres never hands a worker more
		// than it asked for (YARN granted amount): the first amount, in
		// the script's order (the order Flink's own scripts pick in).
		s.log.WithFields(logrus.Fields{"resource": s.resource, "script": s.path, "amount": amount, "indices": strings.Join(indices, ","),
			"kept": strings.Join(indices[:amount], ",")}).
			Warn("discovery script returned more indices than requested; the worker gets the first ones only")
		indices = indices[:amount]
	}
	s.log.WithFields(logrus.Fields{"resource": s.resource, "script": s.path, "indices": strings.Join(indices, ","), "took": time.Since(start)}).
		Debug("discovery script succeeded")
	infos := make([]resources.Info, len(indices))
	for i, ix := range indices {
		infos[i] = resources.Properties{"index": ix}
	}
	return infos, nil, nil
}

// coordinatedPick reserves amount of a Flink-protocol script's indices
// with xres's host coordination (coordination.enabled: true set
// explicitly). A script that does not coordinate prints the same first
// devices for every worker (Flink's default mode): when the ones it
// printed are held by other workers, it is asked again for more (the
// held ones plus amount, doubling), up to what it can give, and amount
// free ones among them are reserved. No device is ever granted twice;
// when the script cannot offer enough free ones, the error says so.
func (s *scriptDriver) coordinatedPick(ctx context.Context, amount int64, indices []string) ([]resources.Info, error) {
	ask := amount
	for {
		infos, err := s.spark.discover(ctx, indices, amount)
		if err == nil || !errors.Is(err, driver.ErrNotEnoughDevices) {
			return infos, err
		}
		next := max(int64(len(indices))+amount, 2*ask)
		if int64(len(indices)) < ask || ask >= maxScriptAsk {
			return nil, fmt.Errorf("discovery script %s printed %s; with coordination.enabled, xres reserves among them and too few are free: %w",
				s.path, strings.Join(indices, ","), err)
		}
		ask = min(next, maxScriptAsk)
		s.log.WithFields(logrus.Fields{"resource": s.resource, "script": s.path, "printed": strings.Join(indices, ","), "ask": ask}).
			Debug("the script's devices are held by other workers; asking it for more")
		_, more, err2 := s.discoverOnce(ctx, amount, ask)
		if err2 != nil {
			return nil, fmt.Errorf("discovery script %s printed %s, too few of them free (%w), and asked for %d devices to choose from it failed: %w",
				s.path, strings.Join(indices, ","), err, ask, err2)
		}
		indices = more
	}
}

// redactedError is an error that quotes a script's output, its message
// with the secrets of the script's args hidden (conf.RedactOutput).
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redactOutput(err error, args []string) error {
	return &redactedError{err: err, msg: conf.RedactOutput(err.Error(), args)}
}

// outputTail renders what a failed script printed, the secrets of its args
// hidden (conf.RedactOutput). Flink's scripts print
// their errors to stdout, so both streams are shown.
func outputTail(res result, args []string) string {
	var b strings.Builder
	if out := strings.TrimSpace(string(res.stdout)); out != "" {
		fmt.Fprintf(&b, "; stdout: %q", clip(conf.RedactOutput(out, args), 512))
	}
	if errOut := strings.TrimSpace(string(res.stderr)); errOut != "" {
		fmt.Fprintf(&b, "; stderr tail: %q", clipTail(conf.RedactOutput(errOut, args), 1024))
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func clipTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// maxIndexLen bounds one index; real ones are "0" or a MIG UUID.
const maxIndexLen = 128

// ParseScriptOutput reads the indices from a discovery script's stdout with
// Flink's rules: only the first line counts; it is split on ","; each piece
// is trimmed and empty pieces are dropped. Duplicates collapse (Flink keeps
// a set), keeping the first occurrence's position. Beyond Flink, a piece
// that is not index-like (letters, digits and . _ : / - only), or a
// negative number (CUDA_VISIBLE_DEVICES=-1 hides every GPU), makes the
// whole output invalid (ErrScriptOutput): a message such as "Could not get
// enough GPU resources." printed with exit code 0 is an error, not a device.
func ParseScriptOutput(out []byte) ([]string, error) {
	indices, _, err := parseScriptOutput(out)
	return indices, err
}

// parseScriptOutput is ParseScriptOutput that also returns the indices
// printed more than once.
func parseScriptOutput(out []byte) (indices, dups []string, err error) {
	line := []byte(firstLine(out))
	if !utf8.Valid(line) {
		return nil, nil, fmt.Errorf("%w: first line is not UTF-8 text", ErrScriptOutput)
	}
	seen := map[string]bool{}
	for _, piece := range strings.Split(string(line), ",") {
		p := strings.TrimSpace(piece)
		if p == "" {
			continue
		}
		if err := checkIndex(p); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrScriptOutput, err) // the caller quotes the output
		}
		if !seen[p] {
			seen[p] = true
			indices = append(indices, p)
		} else if !slices.Contains(dups, p) {
			dups = append(dups, p)
		}
	}
	return indices, dups, nil
}

// firstLine is out up to its first newline (a trailing CR dropped), the
// line Flink's protocol reads.
func firstLine(out []byte) string {
	line := out
	if i := bytes.IndexByte(out, '\n'); i >= 0 {
		line = out[:i]
	}
	return string(bytes.TrimSuffix(line, []byte("\r")))
}

// NVIDIAGPUsDir has one folder per GPU the NVIDIA kernel driver knows
// (named by PCI address); in a container, the NVIDIA container runtime
// shows only the container's GPUs there, as nvidia-smi shows only them.
const NVIDIAGPUsDir = "/proc/driver/nvidia/gpus"

// nvidiaGPUsDir is where scripts' indices are counted (tests point it
// elsewhere).
var nvidiaGPUsDir = NVIDIAGPUsDir

// nvidiaGPUCount is how many GPUs dir lists; ok is false where it cannot be
// read or lists none (no NVIDIA driver loaded, a fake host): then the
// host's GPU count is unknown.
func nvidiaGPUCount(dir string) (int, bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	n := 0
	for _, e := range ents {
		if e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			n++
		}
	}
	return n, n > 0
}

// checkHostIndices refuses, for NVIDIA GPUs, a numeric index the host
// cannot have: one at or beyond its GPU count, where that is known
// (nvidia-smi numbers the GPUs from 0, in a container those it sees).
// Other indices (uuids, "0:1" MIG instances) are left to the runtime.
// The count is read from the kernel driver's folder, a directory read;
// only an index beyond it, or a numeric index where the folder is absent
// (a container without /proc/driver/nvidia), asks nvidia-smi, whose word,
// where it answers, is final: it is what Flink's script numbers by (and a fake host's
// nvidia-smi, first on PATH, stands for the host in tests and demos).
func (s *scriptDriver) checkHostIndices(ctx context.Context, indices []string) error {
	if !s.nvidia {
		return nil
	}
	dir := s.gpusDir
	if dir == "" {
		dir = nvidiaGPUsDir
	}
	n, ok := nvidiaGPUCount(dir)
	if ok && firstBeyond(indices, n) == "" {
		return nil
	}
	if !ok && firstBeyond(indices, 0) == "" {
		return nil // no numeric index to check
	}
	src := dir
	if c, err := s.smiCount(ctx); err == nil {
		n, src = c, "nvidia-smi"
	} else if !ok {
		// Neither the driver's folder nor nvidia-smi: the count is unknown.
		s.log.WithError(err).WithField("resource", s.resource).Debug("no " + dir + " and no nvidia-smi answer; the script's indices are not checked against the host")
		return nil
	} else {
		s.log.WithError(err).WithField("resource", s.resource).Debug("nvidia-smi does not confirm the GPU count; going by " + dir)
	}
	ix := firstBeyond(indices, n)
	if ix == "" {
		return nil
	}
	if n == 0 {
		return fmt.Errorf("%w: index %s, but this host has no GPUs (per %s)", ErrScriptOutput, ix, src)
	}
	return fmt.Errorf("%w: index %s is beyond this host's GPUs: it has %d (indices 0 to %d, per %s)", ErrScriptOutput, ix, n, n-1, src)
}

// firstBeyond is the first of indices that is a number n or more, "" when
// none is.
func firstBeyond(indices []string, n int) string {
	for _, ix := range indices {
		if !isDigits(ix) {
			continue
		}
		if v, err := strconv.Atoi(ix); err != nil || v >= n {
			return ix
		}
	}
	return ""
}

// smiCount is how many GPUs nvidia-smi lists.
func (s *scriptDriver) smiCount(ctx context.Context) (int, error) {
	getenv := s.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	path, err := driver.LookPath(s.smi, getenv)
	if err != nil {
		return 0, err
	}
	timeout := s.smiTimeout
	if timeout <= 0 {
		timeout = driver.DefaultTimeout
	}
	res, err := run(ctx, path, []string{"--query-gpu=index", "--format=csv,noheader"}, nil, timeout)
	if err != nil {
		return 0, err
	}
	if res.timedOut || res.exitCode != 0 {
		return 0, fmt.Errorf("%s exited %d%s", path, res.exitCode, outputTail(res, nil))
	}
	n := 0
	for _, line := range strings.Split(string(res.stdout), "\n") {
		if strings.TrimSpace(line) != "" {
			n++
		}
	}
	return n, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func checkIndex(p string) error {
	if len(p) > maxIndexLen {
		return fmt.Errorf("index longer than %d bytes", maxIndexLen)
	}
	if n, ok := strings.CutPrefix(p, "-"); ok && isDigits(n) {
		return fmt.Errorf("index %s is negative", p)
	}
	for _, r := range p {
		switch {
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r == '.', r == '_', r == ':', r == '/', r == '-':
		default:
			return fmt.Errorf("index %q contains %q", clip(p, 40), r)
		}
	}
	return nil
}

// maxGPUIndexDigits bounds a decimal GPU index: no host has 100,000 GPUs,
// and a longer number (a 20-digit one) is noise, not an index.
const maxGPUIndexDigits = 5

// checkNVIDIADevices refuses what CUDA_VISIBLE_DEVICES must not get from
// a script: for NVIDIA GPUs a device is a decimal index in canonical form
// ("0", "12": no sign, no leading zero, which would name GPU 0 twice as
// "0" and "00", no "0x1", no "0.0"), a MIG device "<gpu>:<instance>" of
// two such numbers, or a uuid (CheckNVIDIAUUID). The error quotes the
// device; the caller names the script and its output.
func checkNVIDIADevices(devices []string) error {
	for _, d := range devices {
		if err := checkNVIDIADevice(d); err != nil {
			return fmt.Errorf("%w: %w", ErrScriptOutput, err)
		}
	}
	return nil
}

func checkNVIDIADevice(d string) error {
	if strings.HasPrefix(d, "GPU-") || strings.HasPrefix(d, "MIG-") {
		return CheckNVIDIAUUID(d)
	}
	if gpu, inst, ok := strings.Cut(d, ":"); ok {
		if isGPUIndex(gpu) && isGPUIndex(inst) {
			return nil
		}
		return fmt.Errorf("device %q is not a MIG device <gpu>:<instance> of two decimal indices", clip(d, 40))
	}
	if !isGPUIndex(d) {
		return fmt.Errorf("device %q is not a GPU index (a decimal number such as 0, at most %d digits, no leading zero), nor a GPU-/MIG- uuid",
			clip(d, 40), maxGPUIndexDigits)
	}
	return nil
}

// isGPUIndex: canonical decimal, at most maxGPUIndexDigits digits.
func isGPUIndex(s string) bool {
	return isDigits(s) && len(s) <= maxGPUIndexDigits && (s == "0" || s[0] != '0')
}

// CheckNVIDIAUUID checks the syntax of an NVIDIA device uuid as nvidia-smi
// and CUDA_VISIBLE_DEVICES write them: GPU-<uuid>, MIG-<uuid> (R470+), or
// the older MIG-GPU-<uuid>/<gi>/<ci>, where <uuid> is 8-4-4-4-12
// hexadecimal digits. Anything else (GPU-../../etc) is refused, quoted.
func CheckNVIDIAUUID(s string) error {
	bad := fmt.Errorf("device %q is not an NVIDIA uuid (GPU-, MIG- or MIG-GPU- then 8-4-4-4-12 hexadecimal digits)", clip(s, 60))
	switch {
	case strings.HasPrefix(s, "MIG-GPU-"):
		rest := s[len("MIG-GPU-"):]
		u, tail, ok := strings.Cut(rest, "/")
		if !ok || !isUUID(u) {
			return bad
		}
		gi, ci, ok := strings.Cut(tail, "/")
		if !ok || !isGPUIndex(gi) || !isGPUIndex(ci) {
			return bad
		}
		return nil
	case strings.HasPrefix(s, "GPU-"), strings.HasPrefix(s, "MIG-"):
		if !isUUID(s[4:]) {
			return bad
		}
		return nil
	}
	return bad
}

// isUUID: 8-4-4-4-12 hexadecimal digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
