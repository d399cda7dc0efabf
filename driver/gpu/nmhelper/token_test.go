package nmhelper

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The exit codes and messages the launcher reads (driver/gpu's spnego):
// usage 2; a container without usable credentials 3, naming what is
// missing; nothing on standard output but a token.
func TestHelperMain(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(garbage, []byte("not a ticket cache"), 0o600))
	krb5 := filepath.Join(dir, "krb5.conf")
	require.NoError(t, os.WriteFile(krb5, []byte("[libdefaults]\n default_realm = EXAMPLE.COM\n"), 0o600))
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		err  []string
	}{
		{name: "nothing", code: ExitUsage, err: []string{"usage: xres-nmrest get"}},
		{name: "no service", args: []string{"token"}, code: ExitUsage, err: []string{"usage: xres-nmrest get", "xres-nmrest token HTTP/<host>"}},
		{name: "not a principal", args: []string{"token", "nm.example.com"}, code: ExitUsage, err: []string{"usage"}},
		{name: "unknown command", args: []string{"HTTP/nm.example.com"}, code: ExitUsage, err: []string{"usage"}},
		{name: "no ticket cache", args: []string{"token", "HTTP/nm.example.com"}, env: map[string]string{"KRB5CCNAME": "FILE:" + filepath.Join(dir, "none")},
			code: ExitNoCredentials, err: []string{"xres-nmrest: no Kerberos credentials: no ticket cache " + filepath.Join(dir, "none")}},
		{name: "no krb5.conf", args: []string{"token", "HTTP/nm.example.com"}, env: map[string]string{"KRB5CCNAME": garbage, "KRB5_CONFIG": filepath.Join(dir, "absent.conf")},
			code: ExitNoCredentials, err: []string{"krb5 configuration " + filepath.Join(dir, "absent.conf")}},
		{name: "not a ticket cache", args: []string{"token", "HTTP/nm.example.com"}, env: map[string]string{"KRB5CCNAME": garbage, "KRB5_CONFIG": krb5},
			code: ExitNoCredentials, err: []string{"ticket cache " + garbage}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(tc.args, &stdout, &stderr, func(k string) string { return tc.env[k] })
			require.Equal(t, tc.code, code, "stderr: %s", stderr.String())
			require.Empty(t, stdout.String())
			for _, s := range tc.err {
				require.Contains(t, stderr.String(), s)
			}
		})
	}
}
