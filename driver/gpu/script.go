package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	log      logrus.FieldLogger
	// spark selects among a Spark script's addresses; built on the first
	// Spark output, so a Flink script never opens the coordination state.
	spark *sparkSelect
}

var (
	_ driver.Driver   = (*scriptDriver)(nil)
	_ driver.Releaser = (*scriptDriver)(nil)
)

// Discover implements driver.Driver.
func (s *scriptDriver) Discover(ctx context.Context, amount int64) ([]resources.Info, error) {
	if amount <= 0 {
		return nil, fmt.Errorf("discover %s: amount must be positive, got %d", s.resource, amount)
	}
	var args []string
	if s.protocol != ProtocolSpark {
		args = append([]string{strconv.FormatInt(amount, 10)}, s.args...)
	}
	start := time.Now()
	res, err := run(ctx, s.path, args, nil, s.timeout)
	if err != nil {
		return nil, fmt.Errorf("run discovery script %s: %w", s.path, err)
	}
	if err := ctx.Err(); err != nil {
		// The caller's deadline or cancellation, not the script timeout.
		return nil, fmt.Errorf("run discovery script %s: %w (its process group was killed)", s.path, err)
	}
	if res.timedOut {
		return nil, fmt.Errorf("run discovery script %s: %w after %s (its process group was killed)%s",
			s.path, ErrScriptTimeout, s.timeout, outputTail(res, args))
	}
	if res.exitCode != 0 {
		how := fmt.Sprintf("exit code %d", res.exitCode)
		if res.exitCode < 0 {
			how = "killed by a signal"
		}
		return nil, fmt.Errorf("run discovery script %s %s: %w: %s%s",
			s.path, conf.RedactArgs(args), ErrScriptFailed, how, outputTail(res, args))
	}
	if s.protocol == ProtocolSpark || (s.protocol == ProtocolAuto && IsSparkOutput(res.stdout)) {
		addrs, err := ParseSparkScriptOutput(s.resource, res.stdout)
		if err != nil {
			return nil, redactOutput(fmt.Errorf("run discovery script %s: %w", s.path, err), args)
		}
		s.log.WithFields(logrus.Fields{"resource": s.resource, "script": s.path, "addresses": strings.Join(addrs, ","), "took": time.Since(start)}).
			Debug("discovery script printed Spark's JSON; xres picks among its addresses")
		return s.spark.discover(ctx, addrs, amount)
	}
	indices, err := ParseScriptOutput(res.stdout)
	if err != nil {
		return nil, redactOutput(fmt.Errorf("run discovery script %s: %w", s.path, err), args)
	}
	if int64(len(indices)) < amount {
		return nil, fmt.Errorf("run discovery script %s: %w: %d requested, it printed %d (%q)",
			s.path, driver.ErrNotEnoughDevices, amount, len(indices), strings.Join(indices, ","))
	}
	if int64(len(indices)) > amount {
		s.log.WithFields(logrus.Fields{"resource": s.resource, "script": s.path, "amount": amount, "indices": strings.Join(indices, ",")}).
			Warn("discovery script returned more indices than requested; passing all on, as Flink does")
	}
	s.log.WithFields(logrus.Fields{"resource": s.resource, "script": s.path, "indices": strings.Join(indices, ","), "took": time.Since(start)}).
		Debug("discovery script succeeded")
	infos := make([]resources.Info, len(indices))
	for i, ix := range indices {
		infos[i] = resources.Properties{"index": ix}
	}
	return infos, nil
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
// that is not index-like (letters, digits and . _ : / - only) makes the
// whole output invalid (ErrScriptOutput): a message such as "Could not get
// enough GPU resources." printed with exit code 0 is an error, not a device.
func ParseScriptOutput(out []byte) ([]string, error) {
	line := out
	if i := bytes.IndexByte(out, '\n'); i >= 0 {
		line = out[:i]
	}
	line = bytes.TrimSuffix(line, []byte("\r"))
	if !utf8.Valid(line) {
		return nil, fmt.Errorf("%w: first line is not UTF-8 text", ErrScriptOutput)
	}
	var indices []string
	seen := map[string]bool{}
	for _, piece := range strings.Split(string(line), ",") {
		p := strings.TrimSpace(piece)
		if p == "" {
			continue
		}
		if err := checkIndex(p); err != nil {
			return nil, fmt.Errorf("%w: first line %q: %v", ErrScriptOutput, clip(string(line), 200), err)
		}
		if !seen[p] {
			seen[p] = true
			indices = append(indices, p)
		}
	}
	return indices, nil
}

func checkIndex(p string) error {
	if len(p) > maxIndexLen {
		return fmt.Errorf("index longer than %d bytes", maxIndexLen)
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
