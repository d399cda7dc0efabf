package amcli

import (
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
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
		hc, addrs, err := amHadoopConfig(getenv, ae, conf.FlinkHadoopProperties(flinkConf(keys)), log)
		require.NoError(t, err)
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
