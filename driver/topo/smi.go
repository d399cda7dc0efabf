package topo

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// ParseSMI reads the matrix `nvidia-smi topo -m` prints: a header naming
// the columns (GPU0..GPUn-1, NICs, "CPU Affinity", "NUMA Affinity",
// "GPU NUMA ID"), a row per GPU (and per NIC, skipped) with X on the
// diagonal, then the legend. Cells are separated by tabs (runs of two or
// more spaces are read as one separator too). An error names the line.
func ParseSMI(out []byte) (*Topology, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var header []string
	gpuCols := map[int]int{} // column -> GPU index
	cpuCol, numaCol := -1, -1
	t := &Topology{Source: "nvidia-smi topo -m"}
	rows := map[int]bool{}
	line := 0
	for sc.Scan() {
		line++
		raw := strings.TrimRight(stripANSI(sc.Text()), " \r")
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" {
			if header != nil && len(rows) > 0 {
				break // the legend follows
			}
			continue
		}
		if strings.HasPrefix(trimmed, "Legend") {
			break
		}
		cells := splitCells(raw)
		if header == nil {
			// The header's first cell (above the row names) is empty.
			if len(cells) > 0 && cells[0] == "" {
				cells = cells[1:]
			}
			header = cells
			for c, name := range header {
				switch {
				case strings.HasPrefix(name, "GPU") && isDigits(name[3:]):
					idx, _ := strconv.Atoi(name[3:])
					if idx != len(gpuCols) {
						return nil, fmt.Errorf("%w: line %d: column %q out of order", ErrBadTopology, line, name)
					}
					gpuCols[c] = idx
				case name == "CPU Affinity":
					cpuCol = c
				case name == "NUMA Affinity":
					numaCol = c
				}
			}
			if len(gpuCols) == 0 {
				return nil, fmt.Errorf("%w: line %d: no GPU columns in the header %q", ErrBadTopology, line, trimmed)
			}
			n := len(gpuCols)
			t.Links = make([][]Link, n)
			for i := range t.Links {
				t.Links[i] = make([]Link, n)
			}
			t.NUMA = make([]int, n)
			t.CPUs = make([]string, n)
			for i := range t.NUMA {
				t.NUMA[i] = -1
			}
			continue
		}
		name := cells[0]
		if !strings.HasPrefix(name, "GPU") || !isDigits(name[3:]) {
			continue // a NIC's row
		}
		row, _ := strconv.Atoi(name[3:])
		if row >= len(t.Links) {
			return nil, fmt.Errorf("%w: line %d: row %s beyond the header's %d GPUs", ErrBadTopology, line, name, len(t.Links))
		}
		if rows[row] {
			return nil, fmt.Errorf("%w: line %d: row %s twice", ErrBadTopology, line, name)
		}
		rows[row] = true
		vals := cells[1:]
		for c, gpu := range gpuCols {
			if c >= len(vals) {
				return nil, fmt.Errorf("%w: line %d: row %s has %d cells, the header %d", ErrBadTopology, line, name, len(vals), len(header))
			}
			v := strings.TrimSpace(vals[c])
			if gpu == row {
				if v != "X" {
					return nil, fmt.Errorf("%w: line %d: %s to itself is %q, want X", ErrBadTopology, line, name, v)
				}
				continue
			}
			l, err := ParseLink(v)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %s-GPU%d: %w", ErrBadTopology, line, name, gpu, err)
			}
			t.Links[row][gpu] = l
		}
		if cpuCol >= 0 && cpuCol < len(vals) {
			if v := strings.TrimSpace(vals[cpuCol]); v != "" && v != "N/A" {
				t.CPUs[row] = v
			}
		}
		if numaCol >= 0 && numaCol < len(vals) {
			if v := strings.TrimSpace(vals[numaCol]); v != "" && v != "N/A" {
				// "0" or, on hosts with several nodes per GPU, "0-1": the first.
				first, _, _ := strings.Cut(strings.Split(v, ",")[0], "-")
				n, err := strconv.Atoi(first)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("%w: line %d: %s NUMA affinity %q", ErrBadTopology, line, name, v)
				}
				t.NUMA[row] = n
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTopology, err)
	}
	if header == nil {
		return nil, fmt.Errorf("%w: no matrix (empty output)", ErrBadTopology)
	}
	if len(rows) != len(t.Links) {
		return nil, fmt.Errorf("%w: %d GPU columns but %d GPU rows", ErrBadTopology, len(t.Links), len(rows))
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// splitCells splits a matrix line on tabs, or on runs of two or more
// spaces where it has no tab.
func splitCells(s string) []string {
	var cells []string
	if strings.Contains(s, "\t") {
		cells = strings.Split(s, "\t")
	} else {
		for _, f := range strings.Split(s, "  ") {
			if f != "" || len(cells) == 0 {
				cells = append(cells, f)
			}
		}
	}
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// stripANSI drops the colour escapes nvidia-smi writes on a terminal.
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b[") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isDigits(s string) bool {
	if s == "" || len(s) > 4 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
