package yarn

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
)

func hadoopConf(kv ...string) *conf.HadoopConfig {
	hc := conf.NewHadoopConfig(func(string) string { return "" })
	for i := 0; i+1 < len(kv); i += 2 {
		hc.Set(kv[i], kv[i+1])
	}
	return hc
}

func TestRMAddresses(t *testing.T) {
	tests := []struct {
		name    string
		conf    []string
		which   RMService
		want    []string
		wantErr string
	}{
		{name: "defaults", which: RMClient, want: []string{"0.0.0.0:8032"}},
		{name: "defaults scheduler", which: RMScheduler, want: []string{"0.0.0.0:8030"}},
		{name: "defaults webapp", which: RMWebapp, want: []string{"0.0.0.0:8088"}},
		{name: "defaults admin", which: RMAdmin, want: []string{"0.0.0.0:8033"}},
		{name: "defaults tracker", which: RMResourceTracker, want: []string{"0.0.0.0:8031"}},
		{name: "hostname moves every address", conf: []string{"yarn.resourcemanager.hostname", "rm"}, which: RMScheduler, want: []string{"rm:8030"}},
		{name: "explicit address", conf: []string{"yarn.resourcemanager.hostname", "rm", "yarn.resourcemanager.address", "other:1"}, which: RMClient, want: []string{"other:1"}},
		{name: "https policy", conf: []string{"yarn.resourcemanager.hostname", "rm", "yarn.http.policy", "HTTPS_ONLY"}, which: RMWebapp, want: []string{"rm:8090"}},
		{name: "ha per-id address and hostname", which: RMClient, conf: []string{
			"yarn.resourcemanager.ha.enabled", "true",
			"yarn.resourcemanager.ha.rm-ids", "rm1,rm2",
			"yarn.resourcemanager.hostname.rm1", "a",
			"yarn.resourcemanager.address.rm2", "b:9032",
		}, want: []string{"a:8032", "b:9032"}},
		{name: "ha webapp", which: RMWebapp, conf: []string{
			"yarn.resourcemanager.ha.enabled", "true",
			"yarn.resourcemanager.ha.rm-ids", "rm2,rm1",
			"yarn.resourcemanager.hostname.rm1", "a",
			"yarn.resourcemanager.hostname.rm2", "b",
		}, want: []string{"b:8088", "a:8088"}},
		{name: "ha ids ignored when disabled", which: RMClient, conf: []string{
			"yarn.resourcemanager.ha.rm-ids", "rm1,rm2",
			"yarn.resourcemanager.hostname.rm1", "a",
		}, want: []string{"0.0.0.0:8032"}},
		{name: "ipv6", which: RMClient, conf: []string{"yarn.resourcemanager.address", "[::1]:8032"}, want: []string{"[::1]:8032"}},
		{name: "ha without ids", which: RMClient, conf: []string{"yarn.resourcemanager.ha.enabled", "true"},
			wantErr: "yarn.resourcemanager.ha.enabled is true but yarn.resourcemanager.ha.rm-ids is empty"},
		{name: "ha id without address", which: RMScheduler, conf: []string{
			"yarn.resourcemanager.ha.enabled", "true", "yarn.resourcemanager.ha.rm-ids", "rm1"},
			wantErr: "rm-id rm1: invalid resourcemanager configuration: neither yarn.resourcemanager.scheduler.address.rm1 nor yarn.resourcemanager.hostname.rm1 is set"},
		{name: "bad ha flag", which: RMClient, conf: []string{"yarn.resourcemanager.ha.enabled", "yes"},
			wantErr: "yarn.resourcemanager.ha.enabled"},
		{name: "no port", which: RMClient, conf: []string{"yarn.resourcemanager.address", "rm"},
			wantErr: `yarn.resourcemanager.address (set): "rm" is not host:port`},
		{name: "bad port", which: RMClient, conf: []string{"yarn.resourcemanager.address", "rm:http"},
			wantErr: `yarn.resourcemanager.address (set): bad port in "rm:http"`},
		{name: "cycle", which: RMClient, conf: []string{"yarn.resourcemanager.hostname", "${yarn.resourcemanager.address}"},
			wantErr: "cycle yarn.resourcemanager.address -> yarn.resourcemanager.hostname -> yarn.resourcemanager.address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RMAddresses(hadoopConf(tt.conf...), tt.which)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrRMConfig)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestRMAddressesFromFile(t *testing.T) {
	hc, err := conf.LoadHadoop(filepath.Join("testdata", "ha"))
	require.NoError(t, err)
	ids, err := RMIDs(hc)
	require.NoError(t, err)
	require.Equal(t, []string{"rm1", "rm2", "rm3"}, ids)

	client, err := RMAddresses(hc, RMClient)
	require.NoError(t, err)
	require.Equal(t, []string{"rm1.example.com:8032", "rm2.example.com:8032", "rm3.example.com:9032"}, client)

	web, err := RMWebappURLs(hc)
	require.NoError(t, err)
	require.Equal(t, []string{"http://rm1.example.com:8088", "http://rm2-web.example.com:9088", "http://rm3.example.com:8088"}, web)

	hc.Set("yarn.http.policy", "HTTPS_ONLY")
	web, err = RMWebappURLs(hc)
	require.NoError(t, err)
	require.Equal(t, []string{"https://rm1.example.com:8090", "https://rm2.example.com:8090", "https://rm3.example.com:9443"}, web)
}

func TestRMServiceString(t *testing.T) {
	require.Equal(t, "scheduler", RMScheduler.String())
	require.Equal(t, "RMService(42)", RMService(42).String())
	_, err := RMAddresses(hadoopConf(), RMService(42))
	require.ErrorIs(t, err, ErrRMConfig)
}

func TestRMConnectPolicy(t *testing.T) {
	tests := []struct {
		name        string
		conf        []string
		wait, retry time.Duration
		wantErr     string
	}{
		{name: "hadoop's defaults", wait: 15 * time.Minute, retry: 30 * time.Second},
		{name: "set", conf: []string{KeyRMConnectMaxWait, "120000", KeyRMConnectRetryInterval, "250"}, wait: 2 * time.Minute, retry: 250 * time.Millisecond},
		{name: "for ever", conf: []string{KeyRMConnectMaxWait, "-1"}, wait: RMWaitForever, retry: 30 * time.Second},
		{name: "not a number", conf: []string{KeyRMConnectMaxWait, "15m"}, wantErr: "yarn.resourcemanager.connect.max-wait.ms (set)"},
		{name: "negative", conf: []string{KeyRMConnectMaxWait, "-5"}, wantErr: "yarn.resourcemanager.connect.max-wait.ms=-5 (set): want milliseconds, or -1"},
		{name: "zero interval", conf: []string{KeyRMConnectRetryInterval, "0"}, wantErr: "retry-interval.ms=0 (set): want a positive number"},
		{name: "interval over the wait", conf: []string{KeyRMConnectMaxWait, "1000", KeyRMConnectRetryInterval, "2000"},
			wantErr: "yarn.resourcemanager.connect.retry-interval.ms=2000 (set) is longer than yarn.resourcemanager.connect.max-wait.ms=1000 (set)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait, retry, err := RMConnectPolicy(hadoopConf(tt.conf...))
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrRMConfig)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wait, wait)
			require.Equal(t, tt.retry, retry)
		})
	}
}

func TestWebProxyURLs(t *testing.T) {
	tests := []struct {
		name string
		conf []string
		want []string
		err  string
	}{
		{name: "the RM's webapp", conf: []string{"yarn.resourcemanager.hostname", "rm"}, want: []string{"http://rm:8088"}},
		{name: "a standalone proxy", conf: []string{"yarn.resourcemanager.hostname", "rm", KeyWebProxyAddress, "proxy:9046"}, want: []string{"http://proxy:9046"}},
		{name: "a standalone proxy under HTTPS_ONLY", conf: []string{KeyWebProxyAddress, "proxy:9046", "yarn.http.policy", "HTTPS_ONLY"}, want: []string{"https://proxy:9046"}},
		{name: "HA: every RM", conf: []string{"yarn.resourcemanager.ha.enabled", "true", "yarn.resourcemanager.ha.rm-ids", "a,b",
			"yarn.resourcemanager.hostname.a", "rm1", "yarn.resourcemanager.webapp.address.b", "rm2:9088"}, want: []string{"http://rm1:8088", "http://rm2:9088"}},
		{name: "a proxy address without a port", conf: []string{KeyWebProxyAddress, "proxy"}, err: KeyWebProxyAddress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WebProxyURLs(hadoopConf(tc.conf...))
			if tc.err != "" {
				require.ErrorIs(t, err, ErrRMConfig)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
