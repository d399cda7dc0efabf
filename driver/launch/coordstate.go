package launch

import (
	"os"
	"strings"

	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/gpu"
	"github.com/xres/xres/resources"
)

// coordination is how a resource's devices are coordinated on the host, as
// the built-in drivers read their params (coordination.enabled,
// coordination.file, and Flink's --enable-coordination-mode /
// --coordination-file in discovery-script.args).
type coordination struct {
	// Mode is "xres" (our state file), "script" (a Flink discovery script
	// coordinates itself), "off", or "" when unknown (a plugin).
	Mode      string `json:"mode"`
	StateFile string `json:"state_file,omitempty"`
}

// coordinationOf works out the coordination of spec, whose factory has
// the primary name factory.
func coordinationOf(spec resources.Spec, factory string, getenv func(string) string) coordination {
	p := spec.Params
	args := strings.Fields(p[gpu.ParamScriptArgs])
	flinkOn, flinkFile := false, ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--enable-coordination-mode":
			flinkOn = true
		case a == "--coordination-file" && i+1 < len(args):
			i++
			flinkFile = args[i]
		case strings.HasPrefix(a, "--coordination-file="):
			flinkFile = strings.TrimPrefix(a, "--coordination-file=")
		}
	}
	switch factory {
	case gpu.FactoryName:
		if scriptMode(p, getenv) {
			if flinkOn {
				return coordination{Mode: "script", StateFile: orDefault(flinkFile, "/var/tmp/flink-gpu-coordination")}
			}
			return coordination{Mode: "off"}
		}
	case "":
		return coordination{}
	}
	if strings.EqualFold(strings.TrimSpace(p[gpu.ParamCoordEnabled]), "false") && !flinkOn {
		return coordination{Mode: "off"}
	}
	file := strings.TrimSpace(p[gpu.ParamCoordFile])
	if file == "" {
		file = flinkFile
	}
	return coordination{Mode: "xres", StateFile: orDefault(file, coord.DefaultStateFile)}
}

// scriptMode reports whether the GPU driver runs a discovery script: the
// path is set and exists (Flink's default path, not installed, falls back
// to built-in discovery).
func scriptMode(p map[string]string, getenv func(string) string) bool {
	raw := strings.TrimSpace(p[gpu.ParamScriptPath])
	if raw == "" {
		return false
	}
	path := raw
	if !strings.HasPrefix(raw, "/") {
		if home := getenv("FLINK_HOME"); home != "" {
			path = strings.TrimSuffix(home, "/") + "/" + raw
		}
	}
	if _, err := os.Stat(path); err != nil && strings.TrimPrefix(raw, "./") == gpu.FlinkDefaultScript {
		return false
	}
	return true
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
