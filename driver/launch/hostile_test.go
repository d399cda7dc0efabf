package launch

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// exclusiveScript is the hostile tests' worker: it claims a marker folder
// named after its GPU for a while. mkdir fails only while another live
// worker has the same GPU, which is then a double grant, recorded in
// $1/double-<pid>.
const exclusiveScript = `d="$1/gpu-$CUDA_VISIBLE_DEVICES"
if mkdir "$d" 2>/dev/null; then sleep 0.05; rmdir "$d"; else echo "$CUDA_VISIBLE_DEVICES" > "$1/double-$$"; fi`

// TestStressLockFileDeleted is issue 12's first finding: while something
// removes every file but the state file from the coordination folder in a
// tight loop, rounds of 12 launchers on 8 GPUs still never grant one GPU
// to two live workers, and the state file ends empty (no lost update left
// an entry behind).
func TestStressLockFileDeleted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 96 processes")
	}
	const rounds, perRound, gpus = 10, 16, 8
	bin := launcherBinary(t)
	h := newFakeGPUHost(t, gpus, 1)
	out := filepath.Join(h.dir, "markers")
	require.NoError(t, os.Mkdir(out, 0o755))
	coordDir := filepath.Dir(h.state)
	require.NoError(t, os.MkdirAll(coordDir, 0o777))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	deletions := 0
	go func() { // the hostile operator: a tmp cleaner gone wrong
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ents, _ := os.ReadDir(coordDir)
			for _, e := range ents {
				if e.Name() != filepath.Base(h.state) && os.Remove(filepath.Join(coordDir, e.Name())) == nil {
					deletions++
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	var once sync.Once
	halt := func() { once.Do(func() { close(stop); wg.Wait() }) }
	defer halt()

	granted := 0
	for r := 0; r < rounds; r++ {
		var cmds []*launched
		done := make(chan *launched, perRound)
		for i := 0; i < perRound; i++ {
			l := &launched{id: i, stderr: &bytes.Buffer{}}
			l.cmd = h.command(bin, "--conf", h.conf, "--", "sh", "-c", exclusiveScript, "worker", out)
			l.cmd.Stderr = l.stderr
			require.NoError(t, l.cmd.Start())
			cmds = append(cmds, l)
			go func(l *launched) {
				err := l.cmd.Wait()
				l.code = 0
				if err != nil {
					l.code = l.cmd.ProcessState.ExitCode()
				}
				done <- l
			}(l)
		}
		for range cmds {
			select {
			case l := <-done:
				require.Contains(t, []int{0, ExitDiscovery}, l.code, "round %d launcher %d: %s", r, l.id, l.stderr)
				if l.code != 0 {
					require.Contains(t, l.stderr.String(), "no free devices left", "round %d launcher %d", r, l.id)
				}
				if l.code == 0 {
					granted++
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("round %d did not end within 60s", r)
			}
		}
	}
	halt()
	doubles, _ := filepath.Glob(filepath.Join(out, "double-*"))
	var got []string
	for _, d := range doubles {
		b, _ := os.ReadFile(d)
		got = append(got, strconv.Quote(string(b)))
	}
	t.Logf("%d rounds: %d grants, %d coordination files deleted meanwhile", rounds, granted, deletions)
	require.Empty(t, got, "GPUs granted to two live workers at once")
	require.Positive(t, deletions, "the deleter never deleted anything: the test proves nothing")
	rep := h.probe(t, bin)
	require.Empty(t, rep.Resources[0].Coordination.Holders, "every grant was released")
}
