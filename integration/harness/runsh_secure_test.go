package harness

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// run.sh's security (and owner) settings reach the launcher as options; bad values fail
// before anything starts, naming the variable.
func TestRunShSecuritySettings(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		want     string // in run.sh's output (code 1) or in the launcher's arguments (code 0)
	}{
		{"default protection", nil, nil, 0, "--rpc-protection=authentication"},
		{"privacy", map[string]string{"XRES_RPC_PROTECTION": "privacy"}, nil, 0, "--rpc-protection=privacy"},
		{"integrity", map[string]string{"XRES_RPC_PROTECTION": "integrity"}, nil, 0, "--rpc-protection=integrity"},
		{"bad protection", map[string]string{"XRES_RPC_PROTECTION": "secret"}, nil, 1,
			"error: XRES_RPC_PROTECTION=secret: want authentication, integrity or privacy"},
		{"not secure by default", nil, nil, 0, "--secure=false"},
		{"XRES_SECURE=1", map[string]string{"XRES_SECURE": "1"}, nil, 0, "--secure=true"},
		{"start --secure", nil, []string{"--secure"}, 0, "--secure=true"},
		{"bad XRES_SECURE", map[string]string{"XRES_SECURE": "maybe"}, nil, 1, "error: XRES_SECURE=maybe: want 1 or 0"},
		{"no owner by default", nil, nil, 0, "--owner-pid=0"},
		{"owner pid", map[string]string{"XRES_MINICLUSTER_OWNER_PID": "4242"}, nil, 0, "--owner-pid=4242"},
		{"bad owner pid", map[string]string{"XRES_MINICLUSTER_OWNER_PID": "me"}, nil, 1, "error: XRES_MINICLUSTER_OWNER_PID=me: want a process id"},
		{"unknown start option", nil, []string{"--insecure"}, 1, "error: start: unknown option '--insecure' (known: --secure, --ha)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunSh(t, true)
			for k, v := range tc.env {
				r.env[k] = v
			}
			out, code := r.run(append([]string{"start"}, tc.args...)...)
			require.Equal(t, tc.wantCode, code, out)
			if code != 0 {
				require.Contains(t, out, tc.want)
				require.NotContains(t, out, "building the launcher", "fails before building")
				return
			}
			logs, code := r.run("logs", "50")
			require.Equal(t, 0, code, logs)
			require.Contains(t, logs, "fake launcher starting: ")
			require.Contains(t, logs, tc.want)
		})
	}
}
