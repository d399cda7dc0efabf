package nmhelper

import (
	"bytes"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// get: what the launcher reads (driver/gpu's HTTPS path) is "HTTP
// <status>" and the body on standard output, and an exit code per
// failure it tells apart: a plain HTTP port (4), an untrusted certificate
// (5, so that it can name the CA param), no Kerberos credentials for a
// NodeManager that asks for SPNEGO (3).
func TestHelperGet(t *testing.T) {
	var negotiate bool
	var gotAuth, gotAccept, gotUA string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotAccept, gotUA = r.Header.Get("Authorization"), r.Header.Get("Accept"), r.Header.Get("User-Agent")
		if negotiate && gotAuth == "" {
			w.Header().Set("WWW-Authenticate", "Negotiate")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.RawPath != "/ws/v1/node/resources/yarn.io%2Fgpu" || r.URL.Query().Get("user.name") != "alice" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"gpuDeviceInformation":{}}`))
	})
	tlsSrv := httptest.NewTLSServer(h)
	t.Cleanup(tlsSrv.Close)
	plain := httptest.NewServer(h)
	t.Cleanup(plain.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o644))
	notPEM := filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o644))
	path := "/ws/v1/node/resources/yarn.io%2Fgpu?user.name=alice"
	httpsURL := tlsSrv.URL + path
	env := map[string]string{"KRB5CCNAME": "FILE:" + filepath.Join(dir, "no-cache")}
	for _, tc := range []struct {
		name      string
		args      []string
		negotiate bool
		code      int
		out       string
		err       []string
	}{
		{name: "answer", args: []string{"get", "--ca-file", ca, httpsURL}, out: "HTTP 200\n" + `{"gpuDeviceInformation":{}}`},
		{name: "status kept", args: []string{"get", "--ca-file", ca, tlsSrv.URL + "/nope"}, out: "HTTP 404\n404 page not found\n"},
		{name: "untrusted certificate", args: []string{"get", httpsURL}, code: ExitUnknownCA, err: []string{"unknown authority"}},
		{name: "plain HTTP port", args: []string{"get", "--ca-file", ca, "https://" + strings.TrimPrefix(plain.URL, "http://") + path},
			code: ExitNotTLS, err: []string{"the port does not speak TLS"}},
		{name: "not a CA file", args: []string{"get", "--ca-file", notPEM, httpsURL}, code: ExitFailed, err: []string{"--ca-file " + notPEM + ": no PEM certificate in it"}},
		{name: "SPNEGO without credentials", args: []string{"get", "--ca-file", ca, httpsURL}, negotiate: true, code: ExitNoCredentials,
			err: []string{"requires SPNEGO", "no Kerberos credentials: no ticket cache"}},
		{name: "not https", args: []string{"get", plain.URL + path}, code: ExitFailed, err: []string{"not an https URL"}},
		{name: "no URL", args: []string{"get", "--ca-file", ca}, code: ExitUsage, err: []string{"usage"}},
		{name: "bad timeout", args: []string{"get", "--timeout", "0s", httpsURL}, code: ExitUsage, err: []string{"usage"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			negotiate = tc.negotiate
			var stdout, stderr bytes.Buffer
			code := Main(tc.args, &stdout, &stderr, func(k string) string { return env[k] })
			require.Equal(t, tc.code, code, "stderr: %s", stderr.String())
			require.Equal(t, tc.out, stdout.String())
			for _, s := range tc.err {
				require.Contains(t, stderr.String(), s)
			}
			if tc.code == 0 && tc.name == "answer" {
				require.Equal(t, "application/json", gotAccept)
				require.Equal(t, "xres-container-launcher", gotUA)
				require.Empty(t, gotAuth)
			}
		})
	}
}
