package amcli

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/security"
	"github.com/xres/xres/yarn/submit"
)

// recordingState is an amstate.Store that counts its calls.
type recordingState struct {
	mu    sync.Mutex
	loads int
	saves [][]byte
}

func (s *recordingState) Load(context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads++
	return nil, nil
}

func (s *recordingState) Save(_ context.Context, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saves = append(s.saves, data)
	return nil
}

// am run hands the AM the state store its clients carry: the AM reads the
// earlier attempt's state at the start and saves its own. Caught: am run
// not wiring the state store into the AM (a next attempt reran every
// worker that had finished).
func TestRunWiresTheStateStore(t *testing.T) {
	staged := map[string]yarn.LocalResource{
		"container-launcher": {URL: yarn.ResourceURL{Scheme: "hdfs", Host: "nn", Port: 8020, File: "/s/container-launcher"}, Size: 3, Timestamp: 4, Type: yarn.File, Visibility: yarn.Application},
	}
	enc, err := submit.EncodeResources(staged)
	require.NoError(t, err)
	envs := map[string]string{"NM_HOST": "127.0.0.1", "CONTAINER_ID": "container_1700000000000_0001_01_000001", submit.EnvLocalResources: enc}
	rm, nm := &scriptRM{exits: []int{0}}, &reportingNM{}
	d := fakeDeps(rm, nm)
	inner := d.amClients
	state := &recordingState{}
	d.amClients = func(ctx context.Context, getenv func(string) string, ae submit.AMEnv, set amplan.Settings, log logrus.FieldLogger) (amClients, error) {
		c, err := inner(ctx, getenv, ae, set, log)
		c.State = state
		return c, err
	}
	code, _, stderr := runAm(t, d, envs, "run", "--conf", "testdata/flink-conf.yaml", "--workers", "1",
		"-D", "rest.bind-address=127.0.0.1", "-D", amplan.KeyHeartbeat+"=1", "--log-level", "warn", "--", "true")
	require.Equal(t, ExitOK, code, stderr)
	state.mu.Lock()
	defer state.mu.Unlock()
	require.Equal(t, 1, state.loads, "the AM read the earlier attempt's state")
	require.NotEmpty(t, state.saves, "the AM saved its state")
	require.Contains(t, string(state.saves[0]), "application_1700000000000_0001")
}

// The AM's clients keep the state in the staging folder (HDFS) on a
// cluster without Kerberos; on a Kerberized one (an HDFS delegation token
// in the credentials) the AM cannot authenticate to HDFS by itself and has
// none. Caught: rpcAMClients not wiring the HDFS state store.
func TestAMClientsWireTheStagingState(t *testing.T) {
	for _, kerberized := range []bool{false, true} {
		dir := t.TempDir()
		var creds security.Credentials
		creds.AddToken("amrm", &security.Token{Kind: security.KindAMRMToken, Identifier: []byte{1}, Password: []byte{2}, Service: "127.0.0.1:1"})
		if kerberized {
			creds.AddToken("hdfs", &security.Token{Kind: security.KindHDFSDelegation, Identifier: []byte{3}, Password: []byte{4}, Service: "127.0.0.1:1"})
		}
		tokenFile := filepath.Join(dir, "container_tokens")
		require.NoError(t, security.WriteTokenFile(tokenFile, &creds, security.FormatWritable))
		site := func(name, key, value string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("<configuration><property><name>"+key+
				"</name><value>"+value+"</value></property></configuration>"), 0o644))
		}
		site("core-site.xml", "fs.defaultFS", "hdfs://127.0.0.1:1")
		site("yarn-site.xml", "yarn.resourcemanager.hostname", "127.0.0.1")
		env := map[string]string{"HADOOP_TOKEN_FILE_LOCATION": tokenFile, "USER": "alice", "HADOOP_USER_NAME": "alice", "HADOOP_CONF_DIR": dir}
		ae := submit.AMEnv{StagingDir: "/user/alice/.xres/application_1700000000000_0001",
			SchedulerAddresses: []string{"127.0.0.1:1"}, RMAddresses: []string{"127.0.0.1:1"}, DefaultFS: "hdfs://127.0.0.1:1"}
		log := logrus.New()
		log.SetLevel(logrus.PanicLevel)
		c, err := rpcAMClients(context.Background(), func(k string) string { return env[k] }, ae, amplan.Settings{}, log)
		require.NoError(t, err, "kerberized %v", kerberized)
		if kerberized {
			require.Nil(t, c.State, "a Kerberized AM without a keytab login keeps no state")
		} else {
			st, ok := c.State.(*stagingState)
			require.True(t, ok, "the AM's state store is the staging folder's: %T", c.State)
			require.Equal(t, ae.StagingDir, st.dir)
		}
		if c.Close != nil {
			c.Close()
		}
	}
}
