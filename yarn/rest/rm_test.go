package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/security"
)

// Hadoop 3.1 and 3.2 send no totalResource in a node report; their
// usedResource and availableResource carry every resource type. The
// capability is then used plus available, GPUs and FPGAs included, as the
// RM's RPC node report says. testdata/nodes-hadoop-3.1.4.json is a 3.1.4
// minicluster's answer with the AM and one GPU worker on 127.0.0.2.
func TestRESTNodesWithoutTotalResource(t *testing.T) {
	body, err := os.ReadFile("testdata/nodes-hadoop-3.1.4.json")
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws/v1/cluster/nodes" {
			http.Error(w, "unexpected "+r.URL.Path, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{Endpoints: []string{srv.URL}, User: "alice", Retries: -1})
	require.NoError(t, err)
	rm := NewRM(c)

	nodes, err := rm.Nodes(context.Background())
	require.NoError(t, err)
	require.Len(t, nodes, 2)
	byID := map[string]yarn.NodeReport{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	total := yarn.Resource{MemoryMB: 4096, VCores: 8, Extra: map[string]int64{"yarn.io/gpu": 2, "yarn.io/fpga": 1}}
	busy := byID["127.0.0.2:41159"]
	require.Equal(t, total, busy.Capability)
	require.Equal(t, yarn.Resource{MemoryMB: 512, VCores: 2, Extra: map[string]int64{"yarn.io/gpu": 1, "yarn.io/fpga": 0}}, busy.Used)
	require.Equal(t, 2, busy.Containers)
	require.Equal(t, total, byID["127.0.0.3:40545"].Capability)

	types, err := rm.ResourceTypes(context.Background())
	require.NoError(t, err)
	require.Equal(t, []yarn.ResourceType{{Name: "memory-mb"}, {Name: "vcores"}, {Name: "yarn.io/fpga"}, {Name: "yarn.io/gpu"}}, types)
}

// A node report with neither totalResource nor the resource lists (an RM
// older than resource types) still has memory and vcores from the flat fields.
func TestRESTNodeCapabilityFlatFields(t *testing.T) {
	rm := NewRM(nil)
	got := rm.nodeCapability(&Node{UsedMemoryMB: 1024, AvailMemoryMB: 3072, UsedVirtualCores: 1, AvailableVirtualCores: 7})
	require.Equal(t, yarn.Resource{MemoryMB: 4096, VCores: 8}, got)
}

func TestRESTSubmissionRefusesTokens(t *testing.T) {
	var c security.Credentials
	c.AddToken("nn", &security.Token{Kind: security.KindHDFSDelegation})
	c.AddSecret("k", []byte("v"))
	b, err := c.Marshal(security.FormatWritable)
	require.NoError(t, err)
	_, err = NewSubmission(yarn.Submission{AM: yarn.LaunchContext{Tokens: b}})
	require.ErrorContains(t, err, "credentials with tokens are not supported")
	require.True(t, strings.Contains(err.Error(), "RPC"))
	_, err = NewSubmission(yarn.Submission{AM: yarn.LaunchContext{Tokens: []byte("HDTS\x00")}})
	require.ErrorIs(t, err, security.ErrTokenFile)
}

// The report secret reaches the RM over REST as a base64 secret key.
func TestRESTSubmissionCarriesSecrets(t *testing.T) {
	var c security.Credentials
	c.AddSecret("xres.report.secret", []byte{0xfb, 0xff, 0x00, 0x01})
	b, err := c.Marshal(security.FormatWritable)
	require.NoError(t, err)
	sub, err := NewSubmission(yarn.Submission{AM: yarn.LaunchContext{Tokens: b}})
	require.NoError(t, err)
	require.NotNil(t, sub.AMContainerSpec.Credentials)
	require.Nil(t, sub.AMContainerSpec.Credentials.Tokens)
	require.Equal(t, &Entries[string]{Entry: []Entry[string]{{Key: "xres.report.secret", Value: "+/8AAQ=="}}}, sub.AMContainerSpec.Credentials.Secrets)
	j, err := json.Marshal(sub.AMContainerSpec)
	require.NoError(t, err)
	require.Contains(t, string(j), `"credentials":{"secrets":{"entry":[{"key":"xres.report.secret","value":"+/8AAQ=="}]}}`)
	none, err := NewSubmission(yarn.Submission{})
	require.NoError(t, err)
	require.Nil(t, none.AMContainerSpec.Credentials)
}
