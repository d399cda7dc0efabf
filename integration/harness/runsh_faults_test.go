package harness

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunShTopologySettings: the settings of the fault and topology profiles fail before
// anything starts, naming the variable; the fault verbs fail clearly without a cluster.
func TestRunShTopologySettings(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"HA not 0 or 1", map[string]string{"XRES_MINICLUSTER_HA": "yes"}, []string{"start"},
			"error: XRES_MINICLUSTER_HA=yes: want 1 or 0"},
		{"label nodes not indexes", map[string]string{"XRES_MINICLUSTER_LABEL_NODES": "nm1"}, []string{"start"},
			"error: XRES_MINICLUSTER_LABEL_NODES=nm1: want NodeManager indexes such as 1 or 0,2"},
		{"expiry not a number", map[string]string{"XRES_MINICLUSTER_NM_EXPIRY_MS": "5s"}, []string{"start"},
			"error: XRES_MINICLUSTER_NM_EXPIRY_MS=5s: want milliseconds"},
		{"rolling interval not a number", map[string]string{"XRES_MINICLUSTER_AMRM_ROLL_SECS": "1m"}, []string{"start"},
			"error: XRES_MINICLUSTER_AMRM_ROLL_SECS=1m: want seconds"},
		{"Hadoop older than 3.1", map[string]string{"XRES_HADOOP_VERSION": "3.0.3"}, []string{"deps"},
			"error: XRES_HADOOP_VERSION=3.0.3 is not supported: the launcher needs Hadoop 3.1 or newer"},
		{"proxied nodes not indexes", map[string]string{"XRES_MINICLUSTER_PROXIED_NODES": "nm1"}, []string{"start"},
			"error: XRES_MINICLUSTER_PROXIED_NODES=nm1: want NodeManager indexes such as 1 or 0,2"},
		{"AM expiry not a number", map[string]string{"XRES_MINICLUSTER_AM_EXPIRY_MS": "1m"}, []string{"start"},
			"error: XRES_MINICLUSTER_AM_EXPIRY_MS=1m: want milliseconds"},
		{"rm-restart --down not seconds", nil, []string{"rm-restart", "--down", "soon"},
			"error: rm-restart: --down wants seconds, got 'soon'"},
		{"rm-stop without a cluster", nil, []string{"rm-stop"},
			"error: rm-stop: the cluster is not running (run.sh start)"},
		{"Hadoop version not x.y.z", map[string]string{"XRES_HADOOP_VERSION": "3.4"}, []string{"start"},
			"error: XRES_HADOOP_VERSION=3.4: want a version such as 3.4.1"},
		{"unknown start option", nil, []string{"start", "--ha", "--fast"},
			"error: start: unknown option '--fast' (known: --secure, --ha)"},
		{"nm-kill without an index", nil, []string{"nm-kill"},
			"error: nm-kill: want a NodeManager index (0-based, see nm-list), got ''"},
		{"nm-start with a name", nil, []string{"nm-start", "127.0.0.2"},
			"error: nm-start: want a NodeManager index (0-based, see nm-list), got '127.0.0.2'"},
		{"verb without a cluster", nil, []string{"rm-restart"},
			"error: rm-restart: the cluster is not running (run.sh start)"},
		{"nm-list without a cluster", nil, []string{"nm-list"},
			"error: nm-list: the cluster is not running (run.sh start)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunSh(t, true)
			for k, v := range tc.env {
				r.env[k] = v
			}
			out, code := r.run(tc.args...)
			require.Equal(t, 1, code, out)
			require.Contains(t, out, tc.want)
		})
	}
}
