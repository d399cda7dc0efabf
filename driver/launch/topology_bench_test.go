package launch

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkLaunchTopology: the launch cost of placement by topology
// (issue 45) beside first-free and the Flink-style script, on a fake
// 8-GPU host with a DGX-1's topology (`nvidia-smi topo -m` prints
// driver/topo/testdata/dgx1.txt), amount 2, interleaved in a random order
// every iteration:
//
//	topo-launch       placement topology (the default): the topology from
//	                  the host-wide cache, the pick under the lock
//	topo-launch-cold  the same with the topology cache removed first: one
//	                  `nvidia-smi topo -m` run (what one launcher a minute pays)
//	ff-launch         placement first-free: no topology read
//	flink-launch      the Flink-style script in coordination mode
//
// Each median is <name>-ms; topo-ratio, topo-cold-ratio and ff-ratio are
// against flink-launch (the launcher's bound is 0.35).
//
//	go test -run '^$' -bench LaunchTopology -benchtime 100x ./driver/launch/
func BenchmarkLaunchTopology(b *testing.B) {
	bin := launcherBinary(b)
	script := flinkPeer(b)
	h := newFakeGPUHost(b, 8, 2)
	fixture, err := filepath.Abs(filepath.Join("..", "topo", "testdata", "dgx1.txt"))
	if err != nil {
		b.Fatal(err)
	}
	h.env = append(h.env, "XRES_FAKE_GPU_TOPO="+fixture)
	flinkFile := filepath.Join(h.dir, "flink-coordination")
	dropTopologyCache := func() {
		files, _ := filepath.Glob(filepath.Join(filepath.Dir(h.state), ".devices-*.json"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(`"links"`)) {
				_ = os.Remove(f)
			}
		}
	}
	type kind struct {
		name   string
		before func()
		argv   []string
	}
	kinds := []kind{
		{name: "topo-launch", argv: []string{bin, "--log-level", "warn", "--conf", h.conf, "--", "true"}},
		{name: "topo-launch-cold", before: dropTopologyCache, argv: []string{bin, "--log-level", "warn", "--conf", h.conf, "--", "true"}},
		{name: "ff-launch", argv: []string{bin, "--log-level", "warn", "--conf", h.conf, "-D", "external-resource.gpu.param.placement=first-free", "--", "true"}},
		{name: "flink-launch", before: func() { _ = os.Remove(flinkFile) },
			argv: []string{"bash", "-c", script + ` 2 --enable-coordination-mode --coordination-file "$0" >/dev/null && true`, flinkFile}},
	}
	ds := make([][]time.Duration, len(kinds))
	rng := rand.New(rand.NewPCG(4, 5))
	order := []int{0, 1, 2, 3}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rng.Shuffle(len(order), func(x, y int) { order[x], order[y] = order[y], order[x] })
		for _, k := range order {
			if kinds[k].before != nil {
				kinds[k].before()
			}
			cmd := exec.Command(kinds[k].argv[0], kinds[k].argv[1:]...)
			cmd.Env, cmd.Dir = h.env, h.dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			ds[k] = append(ds[k], time.Since(start))
			if err != nil || strings.Contains(stderr.String(), "level=error") {
				b.Fatalf("%s: %v\n%s", kinds[k].name, err, stderr.String())
			}
		}
	}
	b.StopTimer()
	med := make([]time.Duration, len(kinds))
	for k := range kinds {
		med[k] = median(ds[k])
		b.ReportMetric(float64(med[k].Microseconds())/1000, kinds[k].name+"-ms")
	}
	b.ReportMetric(float64(med[0])/float64(med[3]), "topo-ratio")
	b.ReportMetric(float64(med[1])/float64(med[3]), "topo-cold-ratio")
	b.ReportMetric(float64(med[2])/float64(med[3]), "ff-ratio")
}
