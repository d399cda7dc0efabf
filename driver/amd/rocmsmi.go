package amd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/driver/pci"
)

// rocmSMIArgs asks rocm-smi for what the driver needs. Its answer is one
// JSON object keyed by card, plus a "system" entry on some versions:
//
//	{"card0": {"Unique ID": "0x74ec1f464356ea00", "PCI Bus": "0000:03:00.0"},
//	 "card1": {"Unique ID": "N/A", "PCI Bus": "0000:23:00.0"}}
var rocmSMIArgs = []string{"--showuniqueid", "--showbus", "--json"}

// Card is one GPU as rocm-smi reports it.
type Card struct {
	Card     int    // N of "cardN"
	UniqueID uint64 // 0 when rocm-smi has none
	BusID    string // 0000:03:00.0, lower case
}

// ParseRocmSMI parses rocm-smi --showuniqueid --showbus --json output into
// cards ordered by card number. Non-card entries ("system") are ignored; a
// card needs a PCI bus id.
func ParseRocmSMI(out []byte) ([]Card, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(out, &top); err != nil {
		return nil, fmt.Errorf("rocm-smi output is not a JSON object: %w", err)
	}
	var cards []Card
	for name, raw := range top {
		num, ok := strings.CutPrefix(name, "card")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("rocm-smi output: %q is not a card name", name)
		}
		var fields map[string]any
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, fmt.Errorf("rocm-smi output: %s is not an object: %w", name, err)
		}
		c := Card{Card: n}
		bus, _ := fields["PCI Bus"].(string)
		bus = strings.ToLower(strings.TrimSpace(bus))
		if _, ok := pci.ParseAddress(bus); !ok {
			return nil, fmt.Errorf("rocm-smi output: %s: \"PCI Bus\" %q is not a PCI address", name, fields["PCI Bus"])
		}
		c.BusID = bus
		if uid, ok := fields["Unique ID"].(string); ok {
			uid = strings.TrimSpace(uid)
			if v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(uid), "0x"), 16, 64); err == nil {
				c.UniqueID = v
			} else if uid != "" && uid != "N/A" {
				return nil, fmt.Errorf("rocm-smi output: %s: \"Unique ID\" %q is not hex", name, uid)
			}
		}
		cards = append(cards, c)
	}
	sort.Slice(cards, func(i, j int) bool { return cards[i].Card < cards[j].Card })
	return cards, nil
}

// runRocmSMI runs rocm-smi with a deadline and returns its stdout.
func runRocmSMI(ctx context.Context, path string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, rocmSMIArgs...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("run %s: timed out after %s%s", path, timeout, tail(stderr.Bytes()))
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil, fmt.Errorf("run %s: exit code %d%s", path, exit.ExitCode(), tail(stderr.Bytes()))
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", path, err)
	}
	return stdout.Bytes(), nil
}

// tail formats the last lines of a command's stderr for an error message.
func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	s = strings.Join(lines, "\n")
	if len(s) > 1024 {
		s = "…" + s[len(s)-1024:]
	}
	return "; stderr: " + s
}
