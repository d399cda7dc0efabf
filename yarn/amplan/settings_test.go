package amplan

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
)

func parseYarn(c *conf.Config) ([]resources.Spec, error) {
	return resources.Parse(c, resources.ParseOptions{Side: resources.SideYarn})
}

// TestLoad: Load reads every setting the AM side uses, once, with Flink's
// defaults where a key is unset.
func TestLoad(t *testing.T) {
	s, err := Load(conf.New(), 0, parseYarn)
	require.NoError(t, err)
	require.Len(t, s.Groups, 1)
	require.Equal(t, 1, s.Workers())
	require.Empty(t, s.Groups[0].Env)
	require.Equal(t, DefaultHeartbeat, s.Heartbeat)
	require.Equal(t, DefaultRequestHeartbeat, s.RequestHeartbeat)
	require.Equal(t, time.Hour, s.BlacklistExpiry)
	require.Equal(t, 5*time.Minute, s.RequestTimeout)
	require.Equal(t, "", s.BindAddress, "unset: Listen's any address")
	require.Equal(t, AppSettings{MemoryMB: 256, VCores: 1, Attempts: 1, MasterEnv: map[string]string{},
		ShipKeytab: true, Tokens: TokenRenewal{Enabled: true, Ratio: 0.75, RetryBackoff: time.Hour}}, s.App)
	require.Empty(t, s.Hadoop)
	require.False(t, s.NullWorker)

	cfg := confOf(map[string]string{
		"xres.bench.null-worker":                                "true",
		"yarn.heartbeat.interval":                               "2",
		"yarn.heartbeat.container-request-interval":             "100",
		"xres.yarn.blacklist.timeout":                           "0",
		"slot.request.timeout":                                  "30 s",
		"rest.bind-address":                                     "127.0.0.1",
		"rest.bind-port":                                        "50100-50200",
		"yarn.application.name":                                 "train",
		"yarn.application.queue":                                "gpu",
		"jobmanager.memory.process.size":                        "1g",
		"yarn.appmaster.vcores":                                 "2",
		"yarn.application-attempts":                             "3",
		"security.kerberos.login.keytab":                        "/k.keytab",
		"security.kerberos.login.principal":                     "u@R",
		"containerized.master.env.JAVA_HOME":                    "/jdk",
		"containerized.taskmanager.env.FOO":                     "bar",
		"xres.worker-groups":                                    "a;b",
		"xres.worker-group.a.workers":                           "2",
		"xres.worker-group.b.workers":                           "1",
		"xres.worker-group.b.containerized.taskmanager.env.FOO": "baz",
		"xres.worker-group.b.command":                           "python b.py",
		"flink.hadoop.dfs.replication":                          "1",
	})
	s, err = Load(cfg, 0, parseYarn)
	require.NoError(t, err)
	require.True(t, s.NullWorker)
	require.Equal(t, 2*time.Second, s.Heartbeat)
	require.Equal(t, 100*time.Millisecond, s.RequestHeartbeat)
	require.Equal(t, time.Duration(0), s.BlacklistExpiry)
	require.Equal(t, 30*time.Second, s.RequestTimeout)
	require.Equal(t, "127.0.0.1", s.BindAddress)
	require.Equal(t, "50100-50200", s.BindPort)
	require.Equal(t, AppSettings{Name: "train", Queue: "gpu", MemoryMB: 1024, VCores: 2, Attempts: 3,
		MasterEnv: map[string]string{"JAVA_HOME": "/jdk"}, Keytab: "/k.keytab", Principal: "u@R",
		ShipKeytab: true, Tokens: TokenRenewal{Enabled: true, Ratio: 0.75, RetryBackoff: time.Hour}}, s.App)
	require.Len(t, s.Groups, 2)
	require.Equal(t, 3, s.Workers())
	require.Equal(t, map[string]string{"FOO": "bar"}, s.Groups[0].Env, "a group sees the plain keys")
	require.Equal(t, map[string]string{"FOO": "baz"}, s.Groups[1].Env, "and its own over them")
	require.Equal(t, []string{"python", "b.py"}, s.Groups[1].Command)
	require.Len(t, s.Hadoop, 1)
	require.Equal(t, "dfs.replication", s.Hadoop[0].Name)
}

// TestLoadErrors: each setting's error names its key and where its value
// came from.
func TestLoadErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		kv   map[string]string
		err  string
	}{
		{"plan", map[string]string{"taskmanager.numberOfTaskSlots": "0"}, "config key taskmanager.numberOfTaskSlots (set): must be at least 1"},
		{"heartbeat", map[string]string{"yarn.heartbeat.interval": "0"}, "config key yarn.heartbeat.interval (set): must be at least 1 second"},
		{"request heartbeat", map[string]string{"yarn.heartbeat.container-request-interval": "soon"}, "config key yarn.heartbeat.container-request-interval (set)"},
		{"blacklist", map[string]string{"xres.yarn.blacklist.timeout": "-1 s"}, "config key xres.yarn.blacklist.timeout (set)"},
		{"request timeout", map[string]string{"slot.request.timeout": "never"}, "slot.request.timeout"},
		{"AM memory", map[string]string{"jobmanager.memory.process.size": "lots"}, "jobmanager.memory.process.size"},
		{"token ratio", map[string]string{"security.delegation.tokens.renewal.time-ratio": "1.5"}, "config key security.delegation.tokens.renewal.time-ratio (set): 1.5: want above 0, at most 1"},
		{"token backoff", map[string]string{"security.delegation.tokens.renewal.retry.backoff": "0 s"}, "config key security.delegation.tokens.renewal.retry.backoff (set): must be positive"},
		{"ship keytab", map[string]string{"yarn.security.kerberos.ship-local-keytab": "maybe"}, "yarn.security.kerberos.ship-local-keytab"},
		{"AM vcores", map[string]string{"yarn.appmaster.vcores": "0"}, "AM container: jobmanager.memory.process.size, yarn.appmaster.vcores and yarn.application-attempts must be positive"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(confOf(tt.kv), 0, parseYarn)
			require.ErrorContains(t, err, tt.err)
		})
	}

	path := filepath.Join(t.TempDir(), "flink-conf.yaml")
	require.NoError(t, os.WriteFile(path, []byte("parallelism.default: 2\nyarn.heartbeat.interval: 0\n"), 0o644))
	cfg, err := conf.Load(path, nil)
	require.NoError(t, err)
	_, err = Load(cfg, 0, parseYarn)
	require.ErrorIs(t, err, ErrBadConfig)
	require.ErrorContains(t, err, "config key yarn.heartbeat.interval ("+path+":2)")
}
