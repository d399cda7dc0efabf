package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// SMIListGPU is one GPU of `nvidia-smi -L`, with its MIG instances.
type SMIListGPU struct {
	Index int
	Name  string
	UUID  string
	MIGs  []SMIListMIG
}

// SMIListMIG is one MIG instance line of `nvidia-smi -L`.
type SMIListMIG struct {
	Index   int    // "Device N" within its GPU
	Profile string // e.g. 1g.10gb
	UUID    string // MIG-… (R470+), or MIG-GPU-<uuid>/<gi>/<ci> (R450)
}

// ParseSMIList parses `nvidia-smi -L`:
//
//	GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-…)
//	  MIG 1g.5gb      Device  0: (UUID: MIG-…)
//	  MIG 2g.10gb     Device  1: (UUID: MIG-…)
//	GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-…)
//
// A MIG line belongs to the GPU line above it. Blank lines are skipped;
// nvidia-smi's failure texts, a MIG line before any GPU, a line of neither
// kind and a repeated GPU index or UUID are errors naming the line.
func ParseSMIList(out []byte) ([]SMIListGPU, error) {
	text := strings.TrimSpace(strings.ReplaceAll(string(out), "\r\n", "\n"))
	if text == "" || isNoDevices(text) {
		return nil, nil
	}
	var gpus []SMIListGPU
	seen := map[string]bool{}
	for n, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		for _, f := range smiFailures {
			if strings.Contains(line, f) {
				return nil, fmt.Errorf("%w: %s", ErrNvidiaSMI, clip(text, 512))
			}
		}
		bad := func(why string) error {
			return fmt.Errorf("%w: -L line %d: %s: %q", ErrNvidiaSMI, n+1, why, clip(line, 200))
		}
		uuid, ok := listUUID(line)
		if !ok {
			return nil, bad("no (UUID: …)")
		}
		if seen[uuid] {
			return nil, bad("uuid " + uuid + " listed twice")
		}
		seen[uuid] = true
		head := strings.TrimSpace(line[:strings.LastIndex(line, "(UUID:")])
		switch {
		case strings.HasPrefix(head, "GPU "):
			num, name, ok := strings.Cut(strings.TrimPrefix(head, "GPU "), ":")
			ix, err := strconv.Atoi(strings.TrimSpace(num))
			if !ok || err != nil || ix < 0 {
				return nil, bad("want \"GPU <index>: <name> (UUID: …)\"")
			}
			for _, g := range gpus {
				if g.Index == ix {
					return nil, bad("GPU " + strconv.Itoa(ix) + " listed twice")
				}
			}
			gpus = append(gpus, SMIListGPU{Index: ix, Name: strings.TrimSpace(name), UUID: uuid})
		case strings.HasPrefix(head, "MIG "):
			f := strings.Fields(head)
			if len(f) != 4 || f[2] != "Device" || !strings.HasSuffix(f[3], ":") {
				return nil, bad("want \"MIG <profile> Device <n>: (UUID: …)\"")
			}
			ix, err := strconv.Atoi(strings.TrimSuffix(f[3], ":"))
			if err != nil || ix < 0 {
				return nil, bad("device number is not a number")
			}
			if !strings.HasPrefix(uuid, "MIG-") {
				return nil, bad("a MIG instance's uuid starts with MIG-")
			}
			if len(gpus) == 0 {
				return nil, bad("MIG instance before any GPU")
			}
			g := &gpus[len(gpus)-1]
			g.MIGs = append(g.MIGs, SMIListMIG{Index: ix, Profile: f[1], UUID: uuid})
		default:
			return nil, bad("neither a GPU nor a MIG line")
		}
	}
	return gpus, nil
}

// listUUID returns the text of the last "(UUID: …)" on the line.
func listUUID(line string) (string, bool) {
	i := strings.LastIndex(line, "(UUID:")
	if i < 0 || !strings.HasSuffix(line, ")") {
		return "", false
	}
	u := strings.TrimSpace(line[i+len("(UUID:") : len(line)-1])
	if u == "" || strings.ContainsAny(u, " \t,()") {
		return "", false
	}
	return u, true
}

// attachSMIList adds the MIG instances `nvidia-smi -L` printed to the GPUs
// of the query, matched by index; a GPU whose uuid differs between the two
// runs is an error (the host changed under us).
func attachSMIList(gpus []gpuRecord, out []byte) error {
	list, err := ParseSMIList(out)
	if err != nil {
		return err
	}
	byIndex := make(map[string]SMIListGPU, len(list))
	for _, l := range list {
		byIndex[strconv.Itoa(l.Index)] = l
	}
	for i := range gpus {
		g := &gpus[i]
		l, ok := byIndex[g.info["index"]]
		if !ok {
			continue
		}
		if u := g.info["uuid"]; u != "" && u != l.UUID {
			return fmt.Errorf("%w: gpu %s is %s in the query but %s in -L", ErrNvidiaSMI, g.info["index"], u, l.UUID)
		}
		for _, m := range l.MIGs {
			g.migs = append(g.migs, migRecord{uuid: m.UUID, index: m.Index, profile: m.Profile})
		}
	}
	return nil
}
