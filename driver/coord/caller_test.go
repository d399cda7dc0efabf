package coord

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeProc writes a /proc with one process per entry: pid → (argv, ppid).
func fakeProc(t *testing.T, procs map[int]struct {
	argv []string
	ppid int
}) procFS {
	t.Helper()
	root := t.TempDir()
	for pid, p := range procs {
		dir := filepath.Join(root, fmt.Sprint(pid))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "cmdline"), []byte(strings.Join(p.argv, "\x00")+"\x00"), 0o644))
		comm := filepath.Base(p.argv[0])
		// Fields 3 (state), 4 (ppid), 5 (pgrp) … 22 (start time).
		stat := fmt.Sprintf("%d (%s) S %d %d 0 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, comm, p.ppid, pid, 1000+pid)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644))
	}
	return procFS{root: root}
}

// The bridge reserves for the engine that runs it, not for the exec
// wrappers and shells in between (a TaskManager that runs its discovery
// script as `env X=1 nice -n 5 timeout 9 sh -c …` holds the devices, not
// the wrappers, which end at once and would free them). Caught: env, nice
// or timeout (or any wrapper) not skipped.
func TestCallerSkipsExecWrappers(t *testing.T) {
	type proc = struct {
		argv []string
		ppid int
	}
	for _, w := range []string{"env", "nice", "ionice", "nohup", "timeout", "stdbuf", "setsid", "chrt", "taskset", "flock", "sh", "bash", "-bash", "dash"} {
		t.Run(w, func(t *testing.T) {
			// 10 java (the engine) → 11 <w> → 12 the script (the caller's parent is 11).
			p := fakeProc(t, map[int]proc{
				10: {argv: []string{"/usr/lib/jvm/bin/java", "-cp", "x"}, ppid: 1},
				11: {argv: []string{"/usr/bin/" + w, "arg"}, ppid: 10},
			})
			got, err := p.caller(11)
			require.NoError(t, err)
			require.Equal(t, 10, got, "%s is a wrapper: the engine above it is the caller", w)
		})
	}
	// A chain of wrappers, as an engine's wrapper script writes it.
	p := fakeProc(t, map[int]proc{
		10: {argv: []string{"java"}, ppid: 1},
		11: {argv: []string{"bash", "run.sh"}, ppid: 10},
		12: {argv: []string{"env", "A=1", "nice", "-n", "5", "timeout", "9", "x"}, ppid: 11},
		13: {argv: []string{"/usr/bin/nice", "-n", "5"}, ppid: 12},
		14: {argv: []string{"/usr/bin/timeout", "9", "script"}, ppid: 13},
	})
	got, err := p.caller(14)
	require.NoError(t, err)
	require.Equal(t, 10, got)
	// A process that is no wrapper is the caller itself.
	got, err = p.caller(10)
	require.NoError(t, err)
	require.Equal(t, 10, got)
	// Wrappers up to init: no caller (init would hold the devices until
	// the next boot).
	p = fakeProc(t, map[int]proc{20: {argv: []string{"env"}, ppid: 1}})
	_, err = p.caller(20)
	require.ErrorIs(t, err, ErrNoCaller)
}
