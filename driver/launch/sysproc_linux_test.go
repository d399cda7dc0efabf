package launch

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// signalHandled reads SigCgt and SigIgn of /proc/<pid>/status: a bit set
// in either means the signal does not end the process.
func TestSignalHandled(t *testing.T) {
	const head = "Name:\tsh\nSigQ:\t0/63523\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000000200\n"
	tests := []struct {
		name    string
		status  string
		sig     syscall.Signal
		handled bool
		err     string
	}{
		{name: "caught", status: head + "SigIgn:\t0000000000000000\nSigCgt:\t0000000000000200\n", sig: syscall.SIGUSR1, handled: true},
		{name: "ignored", status: head + "SigIgn:\t0000000000000200\nSigCgt:\t0000000000000000\n", sig: syscall.SIGUSR1, handled: true},
		{name: "blocked only", status: head + "SigIgn:\t0000000000000000\nSigCgt:\t0000000000000000\n", sig: syscall.SIGUSR1},
		{name: "another caught", status: head + "SigIgn:\t0000000000000000\nSigCgt:\t0000000000000800\n", sig: syscall.SIGUSR1},
		{name: "USR2 caught", status: head + "SigIgn:\t0000000000000000\nSigCgt:\t0000000000000800\n", sig: syscall.SIGUSR2, handled: true},
		{name: "high bit", status: head + "SigIgn:\t0000000000000000\nSigCgt:\tfffffffe7ffbfeff\n", sig: syscall.SIGHUP, handled: true},
		{name: "no masks", status: head, sig: syscall.SIGUSR1, err: "no SigCgt and SigIgn"},
		{name: "garbage mask", status: head + "SigIgn:\tzz\nSigCgt:\t0\n", sig: syscall.SIGUSR1, err: `SigIgn: "zz"`},
		{name: "signal out of range", status: head + "SigIgn:\t0\nSigCgt:\t0\n", sig: 0, err: "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := signalHandled([]byte(tc.status), tc.sig)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.handled, got)
		})
	}
	// This process: the Go runtime catches SIGUSR1.
	got, err := handlesSignal(os.Getpid(), syscall.SIGUSR1)
	require.NoError(t, err)
	require.True(t, got)
}

// FuzzSignalHandled: any /proc status text gives an answer or an error,
// never a panic; a bit set in SigCgt or SigIgn is always "handled".
func FuzzSignalHandled(f *testing.F) {
	f.Add([]byte("SigIgn:\t0000000000000000\nSigCgt:\t0000000000000200\n"), 10)
	f.Add([]byte("SigIgn:\tffffffffffffffff\nSigCgt:\t\n"), 1)
	f.Add([]byte("SigCgt:0\n"), 64)
	f.Fuzz(func(t *testing.T, status []byte, sig int) {
		handled, err := signalHandled(status, syscall.Signal(sig))
		if err != nil {
			require.False(t, handled)
		}
	})
}
