package gpu

import (
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The fake nvidia-smi (testdata/fake-nvidia-smi) stands for the GPUs of the
// minicluster's GPU plugin modes: minor numbers that differ from the index,
// a devices cgroup (XRES_FAKE_GPU_EXCLUDED_MINORS) and a container of the
// NVIDIA runtime (XRES_FAKE_DOCKER, NVIDIA_VISIBLE_DEVICES). Launchers and
// YARN's own GpuDiscoverer read it, so what it prints is checked here.

func runFakeSMI(t *testing.T, env map[string]string, args ...string) (string, int) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("testdata", "fakebin", "nvidia-smi"))
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	require.NoError(t, err)
	return string(out), 0
}

func uuidOf(host, index string) string {
	return "GPU-00000000-0000-4000-8000-" + host + index
}

func TestFakeNvidiaSMIViews(t *testing.T) {
	four := map[string]string{"XRES_FAKE_GPUS": "4", "XRES_FAKE_GPU_MINORS": "2,4,6,0"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range four {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	query := []string{"--query-gpu=index,uuid,pci.bus_id", "--format=csv,noheader"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
		code int
	}{
		{"host: every GPU, old UUIDs for host 0", four, query,
			"0, " + uuidOf("0000", "00000000") + ", 00000000:10:00.0\n1, " + uuidOf("0000", "00000001") + ", 00000000:11:00.0\n" +
				"2, " + uuidOf("0000", "00000002") + ", 00000000:12:00.0\n3, " + uuidOf("0000", "00000003") + ", 00000000:13:00.0\n", 0},
		{"devices cgroup: host indices kept", with("XRES_FAKE_GPU_EXCLUDED_MINORS", "2,6,0"), query,
			"1, " + uuidOf("0000", "00000001") + ", 00000000:11:00.0\n", 0},
		{"devices cgroup, -L", with("XRES_FAKE_GPU_EXCLUDED_MINORS", "4,0", "XRES_FAKE_GPU_HOST", "7"), []string{"-L"},
			"GPU 0: NVIDIA Fake GPU 80GB (UUID: " + uuidOf("0007", "00000000") + ")\nGPU 2: NVIDIA Fake GPU 80GB (UUID: " + uuidOf("0007", "00000002") + ")\n", 0},
		{"devices cgroup excluding all", with("XRES_FAKE_GPU_EXCLUDED_MINORS", "2,4,6,0"), []string{"-L"}, "No devices were found\n", 6},
		{"docker: indices renumbered from 0 in host order", with("XRES_FAKE_DOCKER", "1", "NVIDIA_VISIBLE_DEVICES", "3,1"), query,
			"0, " + uuidOf("0000", "00000001") + ", 00000000:11:00.0\n1, " + uuidOf("0000", "00000003") + ", 00000000:13:00.0\n", 0},
		{"docker: by UUID", with("XRES_FAKE_DOCKER", "1", "NVIDIA_VISIBLE_DEVICES", uuidOf("0000", "00000002")), []string{"-L"},
			"GPU 0: NVIDIA Fake GPU 80GB (UUID: " + uuidOf("0000", "00000002") + ")\n", 0},
		{"docker: all", with("XRES_FAKE_DOCKER", "1", "NVIDIA_VISIBLE_DEVICES", "all"), []string{"--query-gpu=index", "--format=csv,noheader"},
			"0\n1\n2\n3\n", 0},
		{"docker: none", with("XRES_FAKE_DOCKER", "1"), []string{"-L"}, "No devices were found\n", 6},
		{"docker: an index the host lacks fails as the runtime does", with("XRES_FAKE_DOCKER", "1", "NVIDIA_VISIBLE_DEVICES", "6"), []string{"-L"},
			"fake nvidia-smi (as nvidia-container-cli): NVIDIA_VISIBLE_DEVICES=6: unknown device id: 6\n", 2},
		{"minors without a count", map[string]string{"XRES_FAKE_GPU_MINORS": "5,3,1"}, []string{"--query-gpu=index", "--format=csv,noheader"},
			"0\n1\n2\n", 0},
		{"more minors than GPUs: the first ones", map[string]string{"XRES_FAKE_GPUS": "2", "XRES_FAKE_GPU_MINORS": "5,3,1"}, []string{"-q"},
			"", -1},
		{"fewer minors than GPUs", map[string]string{"XRES_FAKE_GPUS": "4", "XRES_FAKE_GPU_MINORS": "5,3,1"}, []string{"-L"},
			"fake nvidia-smi: XRES_FAKE_GPU_MINORS=5,3,1 names 3 minor numbers but XRES_FAKE_GPUS=4\n", 2},
		{"bad minors", map[string]string{"XRES_FAKE_GPU_MINORS": "1,,2"}, []string{"-L"},
			"fake nvidia-smi: XRES_FAKE_GPU_MINORS=1,,2: want minor numbers such as 2,0\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runFakeSMI(t, tc.env, tc.args...)
			if tc.code == -1 {
				// -q with 2 GPUs of minor numbers 5 and 3.
				require.Regexp(t, `(?s)Attached GPUs +: 2\n.*Minor Number +: 5\n.*Minor Number +: 3\n`, out)
				return
			}
			require.Equal(t, tc.want, out)
			require.Equal(t, tc.code, code)
		})
	}
}

// -q prints each GPU's minor number; the docker view keeps the host's.
func TestFakeNvidiaSMIQueryMinorNumbers(t *testing.T) {
	out, code := runFakeSMI(t, map[string]string{"XRES_FAKE_GPU_MINORS": "2,4,6,0", "XRES_FAKE_DOCKER": "1", "NVIDIA_VISIBLE_DEVICES": "0,3"}, "-q")
	require.Equal(t, 0, code, out)
	re := regexp.MustCompile(`(?m)^GPU (\S+)\n(?:    .*\n)*?    GPU UUID +: (\S+)\n    Minor Number +: (\d+)$`)
	var got [][]string
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1:])
	}
	require.Equal(t, [][]string{
		{"00000000:10:00.0", uuidOf("0000", "00000000"), "2"},
		{"00000000:13:00.0", uuidOf("0000", "00000003"), "0"},
	}, got, out)
	require.Contains(t, out, "Attached GPUs                             : 2\n")
}

// -x -q is the XML YARN's GpuDiscoverer parses: one <gpu> per GPU in index
// order with uuid, minor_number and the PCI bus id.
func TestFakeNvidiaSMIXML(t *testing.T) {
	out, code := runFakeSMI(t, map[string]string{"XRES_FAKE_GPU_MINORS": "2,0", "XRES_FAKE_GPU_HOST": "1"}, "-x", "-q")
	require.Equal(t, 0, code, out)
	var log struct {
		Driver   string `xml:"driver_version"`
		Attached int    `xml:"attached_gpus"`
		GPUs     []struct {
			ID    string `xml:"id,attr"`
			UUID  string `xml:"uuid"`
			Minor int    `xml:"minor_number"`
			Bus   string `xml:"pci>pci_bus_id"`
			Total string `xml:"fb_memory_usage>total"`
		} `xml:"gpu"`
	}
	dec := xml.NewDecoder(strings.NewReader(out))
	require.NoError(t, dec.Decode(&log), out)
	require.Equal(t, 2, log.Attached)
	require.NotEmpty(t, log.Driver)
	require.Len(t, log.GPUs, 2)
	require.Equal(t, "00000000:10:00.0", log.GPUs[0].ID)
	require.Equal(t, log.GPUs[0].ID, log.GPUs[0].Bus)
	require.Equal(t, uuidOf("0001", "00000000"), log.GPUs[0].UUID)
	require.Equal(t, 2, log.GPUs[0].Minor)
	require.Equal(t, uuidOf("0001", "00000001"), log.GPUs[1].UUID)
	require.Equal(t, 0, log.GPUs[1].Minor)
	require.Equal(t, "81920 MiB", log.GPUs[1].Total)
}
