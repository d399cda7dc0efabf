package amcli

import (
	"context"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/security"
	"github.com/xres/xres/yarn/submit"
)

// am run starts the token loop and starts every worker with the newest
// credentials it has: the replacement of a worker that failed after a
// renewal carries the renewed token, not the submission's.
func TestRunStartsWorkersWithTheNewestTokens(t *testing.T) {
	staged := map[string]yarn.LocalResource{
		"container-launcher": {URL: yarn.ResourceURL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/s/container-launcher"}, Size: 3, Timestamp: 4, Type: yarn.File, Visibility: yarn.Application},
	}
	enc, err := submit.EncodeResources(staged)
	require.NoError(t, err)
	envs := map[string]string{"NM_HOST": "127.0.0.1", "CONTAINER_ID": "container_1700000000000_0001_01_000001", submit.EnvLocalResources: enc}

	// Credentials holding one delegation token, named what, and the
	// application's secret.
	hdts := func(what string) []byte {
		var c security.Credentials
		c.AddToken("hdfs", &security.Token{Identifier: []byte(what), Kind: "HDFS_DELEGATION_TOKEN"})
		c.AddSecret(contract.ReportSecretAlias, []byte("application secret"))
		b, err := c.Marshal(security.FormatWritable)
		require.NoError(t, err)
		return b
	}
	rm, nm := &scriptRM{exits: []int{1, 0}}, &reportingNM{}
	d := fakeDeps(rm, nm)
	var mu sync.Mutex
	calls := 0
	renewed := make(chan struct{})
	var settings amplan.Settings
	d.amClients = func(ctx context.Context, getenv func(string) string, ae submit.AMEnv, set amplan.Settings, log logrus.FieldLogger) (amClients, error) {
		settings = set
		return amClients{RM: rm, NM: nm, WorkerTokens: hdts("submission"), ReportSecret: []byte("application secret"),
			Tokens: func() []byte {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls == 1 {
					return hdts("first")
				}
				return hdts("renewed")
			},
			Renew: func(ctx context.Context) { close(renewed); <-ctx.Done() },
		}, nil
	}
	code, _, stderr := runAm(t, d, envs, "run", "--conf", "testdata/flink-conf.yaml", "--workers", "1",
		"-D", "rest.bind-address=127.0.0.1", "-D", amplan.KeyHeartbeat+"=1", "--log-level", "warn", "--", "true")
	require.Equal(t, ExitOK, code, stderr)
	<-renewed
	require.Len(t, nm.launches, 2, "the worker and its replacement")
	for i, want := range []string{"first", "renewed"} {
		creds, err := security.ParseCredentials(nm.launches[i].Tokens)
		require.NoError(t, err)
		require.Equal(t, want, string(creds.Token("hdfs").Identifier))
		require.NotEmpty(t, creds.Secret(contract.ContainerKeyAlias), "the worker's own key")
		require.Nil(t, creds.Secret(contract.ReportSecretAlias), "never the application's secret")
	}
	// Flink's defaults reach the loop.
	require.Equal(t, amplan.TokenRenewal{Enabled: true, Ratio: 0.75, RetryBackoff: 3600e9}, settings.App.Tokens)
	require.True(t, settings.App.ShipKeytab)
}
