package am

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/amnm"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/amweb"
	"github.com/xres/xres/yarn/security"
)

// portAM runs an AM of one group of two workers with a port, c2 and c3,
// and calls during with it once both reported their ports (41000, 41001).
func portAM(t *testing.T, during func(a *AM)) {
	t.Helper()
	c2, c3 := ctr(2, "nm1"), ctr(3, "nm2")
	res, _, _ := runRV(t, []amplan.Group{rvGroup("w", 2, amplan.Plan{Port: amplan.PortAuto})}, nil,
		allocRV(c2, c3),
		func(a *AM) (yarn.AllocateResponse, error) {
			report(t, a, c2, 41000)
			report(t, a, c3, 41001)
			during(a)
			return yarn.AllocateResponse{}, nil
		},
		doneAll(c2, c3),
	)
	require.Equal(t, yarn.StatusSucceeded, res.Status, res.Diagnostics)
}

// GET api/workers is served to every caller (through the RM's proxy, and
// directly to the workers): the counts only. The peers' addresses, which
// api/rendezvous gives only to a signed request, go only to a container's
// launcher signing with its key (and the answer is signed for it).
func TestWorkersAddressesOnlyToAContainersLauncher(t *testing.T) {
	nonce := strings.Repeat("cd", contract.NonceBytes)
	portAM(t, func(a *AM) {
		srv := httptest.NewServer(amweb.NewTracker(a, nil, amweb.WithReportSecret(testSecret)))
		defer srv.Close()
		get := func(query, sig string) (*http.Response, []byte) {
			req, err := http.NewRequest(http.MethodGet, srv.URL+amweb.PathWorkers+query, nil)
			require.NoError(t, err)
			if sig != "" {
				req.Header.Set(contract.HeaderReportSignature, sig)
				req.Header.Set(contract.HeaderNonce, nonce)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp, b
		}
		resp, body := get("", "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var c amstatus.WorkerCount
		require.NoError(t, json.Unmarshal(body, &c))
		require.Equal(t, 2, c.Target)
		require.Len(t, c.Groups, 1)
		require.Empty(t, c.Groups[0].Addresses, "no addresses to an unauthenticated caller")
		require.NotContains(t, string(body), "4100")
		resp, body = get("?container="+ctr(2, "nm1").ID, "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NotContains(t, string(body), "4100", "naming a container proves nothing")

		id := ctr(2, "nm1").ID
		resp, body = get("?container="+id, contract.SignReport(keyOf(id), contract.WorkersMessage(id)))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		require.NoError(t, json.Unmarshal(body, &c))
		require.Equal(t, []string{"nm1:41000", "nm2:41001"}, c.Groups[0].Addresses)
		require.True(t, contract.VerifyReport(keyOf(id), contract.AnswerMessage(contract.AnswerWorkers, id, nonce, body), resp.Header.Get(contract.HeaderAnswerSignature)))

		for name, sig := range map[string]string{
			"another container's key": contract.SignReport(keyOf(ctr(3, "nm2").ID), contract.WorkersMessage(id)),
			"the rendezvous message":  contract.SignReport(keyOf(id), contract.RendezvousMessage(id)),
			"garbage":                 "hmac-sha256=00",
		} {
			resp, body = get("?container="+id, sig)
			require.Equal(t, http.StatusForbidden, resp.StatusCode, name)
			require.NotContains(t, string(body), "4100", name)
		}
	})
}

// A signed report carries its seq: a report recorded on the wire and sent
// again (a replay) is refused, and the container's port stays the newest.
// Full reports and command-started reports are counted apart (the
// launcher sends them side by side).
func TestReplayedReportRefused(t *testing.T) {
	portAM(t, func(a *AM) {
		srv := httptest.NewServer(amweb.NewTracker(a, nil, amweb.WithReportSecret(testSecret)))
		defer srv.Close()
		id := ctr(2, "nm1").ID
		post := func(rep contract.DeviceReport) (int, []byte) {
			body, err := json.Marshal(rep)
			require.NoError(t, err)
			return postRaw(t, srv.URL, body, contract.SignReport(keyOf(id), body)), body
		}
		repost := func(body []byte) int { return postRaw(t, srv.URL, body, contract.SignReport(keyOf(id), body)) }
		devs := map[string][]resources.Properties{"gpu": {{"index": "0"}}}
		code, old := post(contract.DeviceReport{Container: id, Seq: 10, Resources: devs, Port: 42000})
		require.Equal(t, http.StatusNoContent, code)
		code, _ = post(contract.DeviceReport{Container: id, Seq: 12, Resources: devs, Port: 43000})
		require.Equal(t, http.StatusNoContent, code)
		code, started := post(contract.DeviceReport{Container: id, Seq: 11, CommandStarted: time.Unix(1700000000, 0)})
		require.Equal(t, http.StatusNoContent, code, "a command-started report overtaken by the port's is taken")

		require.Equal(t, http.StatusConflict, repost(old), "the old report, replayed")
		require.Equal(t, http.StatusConflict, repost(started), "the command-started report, replayed")
		require.Equal(t, []string{"nm1:43000", "nm2:41001"}, a.Status().Groups[0].Addresses, "the port stays the newest")
	})
}

func postRaw(t *testing.T, base string, body []byte, sig string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+amweb.PathReport, bytes.NewReader(body))
	require.NoError(t, err)
	if sig != "" {
		req.Header.Set(contract.HeaderReportSignature, sig)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// Every worker container gets a key of its own, never the application's
// secret: one call per batch where the NodeManager client can, the other
// tokens and secrets kept, WithTokens' renewed credentials too.
func TestContainerKeysPerContainer(t *testing.T) {
	var base security.Credentials
	base.AddToken("hdfs", &security.Token{Identifier: []byte("id"), Password: []byte("pw"), Kind: "HDFS_DELEGATION_TOKEN", Service: "nn:8020"})
	base.AddSecret(contract.ReportSecretAlias, testSecret)
	base.AddSecret("other", []byte("kept"))
	tokens, err := base.Marshal(security.FormatWritable)
	require.NoError(t, err)
	cs := []yarn.Container{ctr(2, "nm1"), ctr(3, "nm1"), ctr(4, "nm1")}
	check := func(t *testing.T, got map[string][]byte) {
		require.Len(t, got, len(cs))
		keys := map[string]bool{}
		for _, c := range cs {
			creds, err := security.ParseCredentials(got[c.ID])
			require.NoError(t, err, c.ID)
			require.Nil(t, creds.Secret(contract.ReportSecretAlias), "%s holds the application's secret", c.ID)
			key := creds.Secret(contract.ContainerKeyAlias)
			require.Equal(t, contract.ContainerKey(testSecret, c.ID), key, c.ID)
			require.Equal(t, []byte("kept"), creds.Secret("other"))
			require.NotNil(t, creds.Token("hdfs"))
			keys[string(key)] = true
		}
		require.Len(t, keys, len(cs), "each container's key is its own")
	}
	launch := yarn.LaunchContext{Commands: []string{"run"}, Tokens: tokens}
	t.Run("each", func(t *testing.T) {
		nm := &eachNM{}
		errs := amnm.WithContainerKeys(nm, testSecret).(amnm.BatchStarter).StartContainers(context.Background(), cs, security.Token{}, launch)
		require.Equal(t, []error{nil, nil, nil}, errs)
		require.Equal(t, 1, nm.calls, "one call for the batch")
		check(t, nm.got)
	})
	t.Run("batch without each", func(t *testing.T) {
		nm := &eachNM{}
		errs := amnm.WithContainerKeys(batchOnly{nm}, testSecret).(amnm.BatchStarter).StartContainers(context.Background(), cs, security.Token{}, launch)
		require.Equal(t, []error{nil, nil, nil}, errs)
		check(t, nm.got)
	})
	t.Run("under amnm.WithTokens, one at a time", func(t *testing.T) {
		nm := &eachNM{}
		wrapped := amnm.WithTokens(amnm.WithContainerKeys(single{nm}, testSecret), func() []byte { return tokens })
		for _, c := range cs {
			require.NoError(t, wrapped.StartContainer(context.Background(), c, security.Token{}, yarn.LaunchContext{}))
		}
		check(t, nm.got)
	})
}

// eachNM records each container's credentials.
type eachNM struct {
	mu    sync.Mutex
	calls int
	got   map[string][]byte
}

func (n *eachNM) record(c yarn.Container, tokens []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.got == nil {
		n.got = map[string][]byte{}
	}
	n.got[c.ID] = tokens
}

func (n *eachNM) StartContainer(ctx context.Context, c yarn.Container, tok security.Token, l yarn.LaunchContext) error {
	n.record(c, l.Tokens)
	return nil
}

func (n *eachNM) StopContainer(context.Context, yarn.Container, security.Token) error { return nil }

func (n *eachNM) StartContainers(ctx context.Context, cs []yarn.Container, tok security.Token, l yarn.LaunchContext) []error {
	for _, c := range cs {
		n.record(c, l.Tokens)
	}
	return make([]error, len(cs))
}

func (n *eachNM) StartContainersEach(ctx context.Context, cs []yarn.Container, tok security.Token, l yarn.LaunchContext, tokens [][]byte) []error {
	n.mu.Lock()
	n.calls++
	n.mu.Unlock()
	for i, c := range cs {
		n.record(c, tokens[i])
	}
	return make([]error, len(cs))
}

// batchOnly is a BatchStarter that is no EachStarter; single neither.
type batchOnly struct{ n *eachNM }

func (b batchOnly) StartContainer(ctx context.Context, c yarn.Container, tok security.Token, l yarn.LaunchContext) error {
	return b.n.StartContainer(ctx, c, tok, l)
}
func (b batchOnly) StopContainer(context.Context, yarn.Container, security.Token) error { return nil }
func (b batchOnly) StartContainers(ctx context.Context, cs []yarn.Container, tok security.Token, l yarn.LaunchContext) []error {
	return b.n.StartContainers(ctx, cs, tok, l)
}

type single struct{ n *eachNM }

func (s single) StartContainer(ctx context.Context, c yarn.Container, tok security.Token, l yarn.LaunchContext) error {
	return s.n.StartContainer(ctx, c, tok, l)
}
func (s single) StopContainer(context.Context, yarn.Container, security.Token) error { return nil }
