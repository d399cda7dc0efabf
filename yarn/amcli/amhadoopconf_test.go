package amcli

import (
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn/submit"
)

// With no HADOOP_CONF_DIR in the AM container, the AM uses the scheduler
// addresses the client passed, not the built-in default 0.0.0.0:8030 (a
// cluster on other ports was never reached, and one on the default ports
// answered in its place), unless the job sets the address itself.
func TestAMHadoopConfigWithoutConfDir(t *testing.T) {
	getenv := func(string) string { return "" }
	ae := submit.AMEnv{SchedulerAddresses: []string{"localhost:28030"}, DefaultFS: "hdfs://localhost:28020"}
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)

	for _, tc := range []struct {
		name string
		keys map[string]string
		want []string
	}{
		{"nothing set", nil, []string{"localhost:28030"}},
		{"only the RM connect policy", map[string]string{
			"flink.yarn.resourcemanager.connect.max-wait.ms": "1000",
			"flink.hadoop.dfs.replication":                   "1",
		}, []string{"localhost:28030"}},
		{"the scheduler address", map[string]string{"flink.yarn.resourcemanager.scheduler.address": "127.0.0.1:40000"}, []string{"127.0.0.1:40000"}},
		{"the RM hostname", map[string]string{"flink.hadoop.yarn.resourcemanager.hostname": "rm.example.com"}, []string{"rm.example.com:8030"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := conf.New()
			for k, v := range tc.keys {
				cfg.Set(k, v)
			}
			hc, addrs, err := amHadoopConfig(getenv, ae, cfg, log)
			require.NoError(t, err)
			require.Equal(t, tc.want, addrs)
			fs, _ := hc.Get("fs.defaultFS")
			require.Equal(t, "hdfs://localhost:28020", fs)
		})
	}
}
