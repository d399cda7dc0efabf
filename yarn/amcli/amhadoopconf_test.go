package amcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/submit"
)

func flinkConf(kv map[string]string) *conf.Config {
	cfg := conf.New()
	for k, v := range kv {
		cfg.Set(k, v)
	}
	return cfg
}

// With no HADOOP_CONF_DIR in the AM container, the AM uses the scheduler addresses the client
// passed, never the built-in default 0.0.0.0:8030 (a cluster on other ports was never reached,
// one on the default ports answered in its place, and in the HA profile the AM lost the RM at
// the first failover: found by make soak), whatever the job's flink.* keys; the client put
// those keys into the addresses it passed (TestJobSchedulerAddresses).
func TestAMHadoopConfigWithoutConfDir(t *testing.T) {
	getenv := func(string) string { return "" }
	ae := submit.AMEnv{SchedulerAddresses: []string{"localhost:28030", "localhost:38030"}, DefaultFS: "hdfs://localhost:28020"}
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	for _, keys := range []map[string]string{
		nil,
		{"flink.yarn.resourcemanager.connect.max-wait.ms": "1000", "flink.hadoop.dfs.replication": "1"},
		{"flink.yarn.resourcemanager.scheduler.address.rm1": "127.0.0.1:40000"},
	} {
		hc, addrs, known, err := amHadoopConfig(getenv, ae, conf.FlinkHadoopProperties(flinkConf(keys)), log)
		require.NoError(t, err)
		require.False(t, known, "no configuration shipped nor in the container")
		require.Equal(t, ae.SchedulerAddresses, addrs, "keys %v", keys)
		fs, _ := hc.Get("fs.defaultFS")
		require.Equal(t, "hdfs://localhost:28020", fs)
		for k, v := range keys {
			key, ok := strings.CutPrefix(k, conf.FlinkHadoopPrefix)
			if !ok {
				key = strings.TrimPrefix(k, "flink.")
			}
			got, _ := hc.Get(key)
			require.Equal(t, v, got, "%s reaches the AM's Hadoop configuration", k)
		}
	}
}

// The client passes the AM the scheduler addresses of its cluster with the job's flink.hadoop.*
// and flink.yarn.* keys over them, per RM id in HA, and leaves its own configuration as it was.
func TestJobSchedulerAddresses(t *testing.T) {
	ha := func() *conf.HadoopConfig {
		hc := conf.NewHadoopConfig(func(string) string { return "" })
		hc.Set("yarn.resourcemanager.ha.enabled", "true")
		hc.Set("yarn.resourcemanager.ha.rm-ids", "rm1,rm2")
		hc.Set("yarn.resourcemanager.scheduler.address.rm1", "localhost:8030")
		hc.Set("yarn.resourcemanager.scheduler.address.rm2", "localhost:18030")
		return hc
	}
	for _, tc := range []struct {
		name string
		keys map[string]string
		want []string
	}{
		{"the cluster's", nil, []string{"localhost:8030", "localhost:18030"}},
		{"per RM id", map[string]string{
			"flink.yarn.resourcemanager.scheduler.address.rm1": "127.0.0.1:40001",
			"flink.yarn.resourcemanager.scheduler.address.rm2": "127.0.0.1:40002",
		}, []string{"127.0.0.1:40001", "127.0.0.1:40002"}},
		{"HA off", map[string]string{"flink.yarn.resourcemanager.ha.enabled": "false", "flink.yarn.resourcemanager.hostname": "rm"},
			[]string{"rm:8030"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc := ha()
			require.Equal(t, tc.want, jobSchedulerAddresses(hc, conf.FlinkHadoopProperties(flinkConf(tc.keys))))
			v, _ := hc.Get("yarn.resourcemanager.scheduler.address.rm1")
			require.Equal(t, "localhost:8030", v, "the client's own configuration is unchanged")
		})
	}
}

// TestJobRMAddresses: the AM container without HADOOP_CONF_DIR lists the
// cluster's nodes at the client's RM address with the job's keys over it,
// not at Hadoop's default 0.0.0.0:8032 (another cluster's RM, or none).
func TestJobRMAddresses(t *testing.T) {
	hc := conf.NewHadoopConfig(func(string) string { return "" })
	hc.Set("yarn.resourcemanager.address", "localhost:48032")
	require.Equal(t, []string{"localhost:48032"}, jobRMAddresses(hc, nil))
	require.Equal(t, []string{"127.0.0.1:40032"}, jobRMAddresses(hc,
		conf.FlinkHadoopProperties(flinkConf(map[string]string{"flink.yarn.resourcemanager.address": "127.0.0.1:40032"}))))
}

// clusterConf is a client's cluster: RM on non-default ports, HTTPS only, a standalone web
// proxy, and a secret the AM must never get.
func clusterConf() *conf.HadoopConfig {
	hc := conf.NewHadoopConfig(func(string) string { return "" })
	for k, v := range map[string]string{
		"fs.defaultFS":                              "hdfs://nn.example:24020",
		"yarn.resourcemanager.hostname":             "rm.example",
		"yarn.resourcemanager.scheduler.address":    "rm.example:24030",
		"yarn.resourcemanager.address":              "rm.example:24032",
		"yarn.resourcemanager.webapp.address":       "rm.example:28088",
		"yarn.resourcemanager.webapp.https.address": "rm.example:28090",
		"yarn.web-proxy.address":                    "proxy.example:28089",
		"yarn.http.policy":                          "HTTPS_ONLY",
		"fs.s3a.secret.key":                         "s3cr3t-value",
		"ssl.server.keystore.password":              "hunter2",
	} {
		hc.Set(k, v)
	}
	return hc
}

// shipConf writes what am submit ships to the AM (submit.MarshalHadoopConf) into dir.
func shipConf(t *testing.T, dir string, hc *conf.HadoopConfig) {
	t.Helper()
	data, err := submit.MarshalHadoopConf(hc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, submit.HadoopConfName), data, 0o600))
}

// The AM takes what its cluster says: the configuration the client resolved (shipped whole),
// with the node's own HADOOP_CONF_DIR over it where the container has one (under the
// AMRMProxy the node names its own scheduler address), the job's keys last. Found with
// Hadoop's clients on the minicluster: the AM redirected to localhost:8088 when the RM's web
// UI was on 28088, and under the AMRMProxy dialled the RM with the proxy's token.
func TestAMHadoopConfigIsTheClusters(t *testing.T) {
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	pwd := t.TempDir()
	shipConf(t, pwd, clusterConf())
	shipped, err := os.ReadFile(filepath.Join(pwd, submit.HadoopConfName))
	require.NoError(t, err)
	require.NotContains(t, string(shipped), "s3cr3t-value", "secrets stay with the client")
	require.NotContains(t, string(shipped), "hunter2", "secrets stay with the client")

	nodeDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(nodeDir, "yarn-site.xml"), []byte(`<configuration>
  <property><name>yarn.resourcemanager.scheduler.address</name><value>127.0.0.2:48049</value></property>
</configuration>`), 0o644))

	for _, tc := range []struct {
		name      string
		env       map[string]string
		job       map[string]string
		sched     []string
		proxy     string
		proxyHost string
	}{
		{"the client's, no HADOOP_CONF_DIR in the container", nil, nil,
			[]string{"rm.example:24030"}, "https://proxy.example:28089", "proxy.example"},
		{"the node's scheduler (AMRMProxy) over the client's", map[string]string{"HADOOP_CONF_DIR": nodeDir}, nil,
			[]string{"127.0.0.2:48049"}, "https://proxy.example:28089", "proxy.example"},
		{"the job's keys last", map[string]string{"HADOOP_CONF_DIR": nodeDir},
			map[string]string{"flink.yarn.web-proxy.address": "", "flink.yarn.http.policy": "HTTP_ONLY"},
			[]string{"127.0.0.2:48049"}, "http://rm.example:28088", "rm.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"PWD": pwd}
			for k, v := range tc.env {
				env[k] = v
			}
			getenv := func(k string) string { return env[k] }
			ae := submit.AMEnv{HadoopConf: submit.HadoopConfName,
				// What older clients passed: never used when the configuration is there.
				SchedulerAddresses: []string{"stale.example:8030"}, RMAddresses: []string{"stale.example:8032"}}
			hc, sched, known, err := amHadoopConfig(getenv, ae, conf.FlinkHadoopProperties(flinkConf(tc.job)), log)
			require.NoError(t, err)
			require.True(t, known)
			require.Equal(t, tc.sched, sched)
			hosts, u, err := webProxy(hc, sched)
			require.NoError(t, err)
			require.Equal(t, tc.proxy, u)
			require.Equal(t, []string{tc.proxyHost}, hosts)
			fs, _ := hc.Get("fs.defaultFS")
			require.Equal(t, "hdfs://nn.example:24020", fs)
			rm, err := yarn.RMAddresses(hc, yarn.RMClient)
			require.NoError(t, err)
			require.Equal(t, []string{"rm.example:24032"}, rm)
		})
	}
}

// A shipped configuration the AM cannot read is an error naming the variable and the file.
func TestAMHadoopConfigShippedFileBroken(t *testing.T) {
	pwd := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(pwd, submit.HadoopConfName), []byte("<configuration><property>"), 0o600))
	getenv := func(k string) string { return map[string]string{"PWD": pwd}[k] }
	_, _, _, err := amHadoopConfig(getenv, submit.AMEnv{HadoopConf: submit.HadoopConfName}, nil, logrus.New())
	require.ErrorContains(t, err, submit.EnvHadoopConf+"="+submit.HadoopConfName)
	require.ErrorContains(t, err, filepath.Join(pwd, submit.HadoopConfName))
}
