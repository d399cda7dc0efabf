package submit

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
)

// The client ships the Hadoop configuration it resolved to the AM alone: staged as
// HadoopConfName, in the AM's local resources and named by its environment, never among the
// workers' files; its keys are the cluster's (not the built-in defaults), ${…} expanded, and
// its secrets stay behind.
func TestSubmitShipsTheClientsHadoopConfToTheAM(t *testing.T) {
	hc := conf.NewHadoopConfig(func(string) string { return "" })
	hc.Set("yarn.resourcemanager.hostname", "rm.example")
	hc.Set("yarn.resourcemanager.webapp.address", "${yarn.resourcemanager.hostname}:28088")
	hc.Set("yarn.http.policy", "HTTPS_ONLY")
	hc.Set("fs.azure.account.key.acct.blob.core.windows.net", "azure-sentinel")
	hc.Set("hadoop.security.credstore.java-keystore-provider.password-file", "pw-sentinel")
	rm := gpuRM()
	fs := newMemFS()
	req := testRequest(t)
	req.HadoopConf = hc
	sub, err := Client{RM: rm, Stager: Stager{FS: fs, DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), req)
	require.NoError(t, err)

	am := rm.submitted.AM
	remote := sub.StagingDir + "/" + HadoopConfName
	require.Contains(t, am.LocalResources, HadoopConfName)
	require.Equal(t, remote, am.LocalResources[HadoopConfName].URL.File)
	require.Equal(t, HadoopConfName, am.Env[EnvHadoopConf])
	ae, err := ReadAMEnv(func(k string) string { return am.Env[k] })
	require.NoError(t, err)
	require.Equal(t, HadoopConfName, ae.HadoopConf)
	require.NotContains(t, ae.Resources, HadoopConfName, "the workers' files")

	staged := string(fs.files[remote])
	require.Contains(t, staged, "<name>yarn.resourcemanager.webapp.address</name>")
	require.Contains(t, staged, "<value>rm.example:28088</value>", "expanded as the client resolved it")
	require.Contains(t, staged, "<value>HTTPS_ONLY</value>")
	require.NotContains(t, staged, "yarn.resourcemanager.scheduler.address", "a built-in default is not the cluster's")
	require.NotContains(t, staged, "azure-sentinel")
	require.NotContains(t, staged, "pw-sentinel")

	// Read back as the AM reads it.
	props, err := conf.ReadHadoopXML(bytes.NewReader(fs.files[remote]), HadoopConfName)
	require.NoError(t, err)
	back := conf.NewHadoopConfig(func(string) string { return "" })
	back.ApplyProperties(props)
	v, _ := back.Get("yarn.resourcemanager.webapp.address")
	require.Equal(t, "rm.example:28088", v)

	// Without one, nothing of it; a user file may not take its name.
	rm = gpuRM()
	_, err = Client{RM: rm, Stager: Stager{FS: newMemFS(), DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), testRequest(t))
	require.NoError(t, err)
	require.NotContains(t, rm.submitted.AM.LocalResources, HadoopConfName)
	require.NotContains(t, rm.submitted.AM.Env, EnvHadoopConf)
	req = testRequest(t)
	req.HadoopConf = hc
	req.Files = append(req.Files, File{Local: req.Files[0].Local, Name: HadoopConfName})
	_, err = Client{RM: gpuRM(), Stager: Stager{FS: newMemFS(), DefaultFS: "hdfs://nn:8020"}}.Submit(context.Background(), req)
	require.ErrorIs(t, err, ErrBadFile)
	require.ErrorContains(t, err, "the client's Hadoop configuration")
}
