package submit

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
)

func hadoopConfWith(kv map[string]string) *conf.HadoopConfig {
	hc := conf.NewHadoopConfig(func(string) string { return "" })
	for k, v := range kv {
		hc.Set(k, v)
	}
	return hc
}

func TestSecure(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
	}{{"kerberos", true}, {" Kerberos ", true}, {"simple", false}, {"", false}} {
		t.Run(strconv.Quote(tc.value), func(t *testing.T) {
			require.Equal(t, tc.want, Secure(hadoopConfWith(map[string]string{"hadoop.security.authentication": tc.value})))
		})
	}
}

func TestKerberosLoginErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	garbage := filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(garbage, []byte("this is not a ticket cache at all"), 0o600))
	// A header that passes the check but whose body is cut short: gokrb5's
	// parser must not take the process down.
	truncated := filepath.Join(dir, "truncated")
	require.NoError(t, os.WriteFile(truncated, []byte{5, 4, 0, 12, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0o600))
	absent := filepath.Join(dir, "absent")
	secure := map[string]string{"hadoop.security.authentication": "kerberos"}
	for _, tc := range []struct {
		name    string
		login   Login
		env     map[string]string
		is      error
		wantMsg []string
	}{
		{name: "keytab without principal", login: Login{Keytab: "/x.keytab"}, is: ErrLoginConfig,
			wantMsg: []string{KeyLoginKeytab + " is set but " + KeyLoginPrincipal + " is not"}},
		{name: "principal not user@REALM", login: Login{Keytab: "/x.keytab", Principal: "alice"}, is: ErrLoginConfig,
			wantMsg: []string{KeyLoginPrincipal + ` "alice": want user@REALM`}},
		{name: "keytab absent", login: Login{Keytab: absent, Principal: "alice@EXAMPLE.COM"}, is: ErrLoginConfig,
			wantMsg: []string{KeyLoginKeytab + ": open " + absent}},
		{name: "principal without keytab", login: Login{Principal: "u@R"}, is: ErrLoginConfig,
			wantMsg: []string{KeyLoginPrincipal + " is set but " + KeyLoginKeytab + " is not"}},
		{name: "no ticket cache", env: map[string]string{"KRB5CCNAME": absent}, is: yarn.ErrNoCredentials,
			wantMsg: []string{KeyLoginKeytab, KeyLoginPrincipal, "no ticket cache " + absent, "kinit"}},
		{name: "FILE: ticket cache absent", env: map[string]string{"KRB5CCNAME": "FILE:" + absent}, is: yarn.ErrNoCredentials,
			wantMsg: []string{"no ticket cache " + absent}},
		{name: "empty ticket cache", env: map[string]string{"KRB5CCNAME": empty}, is: yarn.ErrNoCredentials,
			wantMsg: []string{empty, "is empty or not a ticket cache (0 bytes)", "not usable"}},
		{name: "not a ticket cache", env: map[string]string{"KRB5CCNAME": garbage}, is: yarn.ErrNoCredentials,
			wantMsg: []string{garbage, "is empty or not a ticket cache"}},
		{name: "truncated ticket cache", env: map[string]string{"KRB5CCNAME": truncated, "KRB5_CONFIG": filepath.Join("testdata", "krb5.conf")},
			is: yarn.ErrNoCredentials, wantMsg: []string{truncated, "not usable"}},
		{name: "keyring cache", env: map[string]string{"KRB5CCNAME": "KEYRING:persistent:0"}, is: yarn.ErrNoCredentials,
			wantMsg: []string{"names no file ticket cache", "KEYRING:persistent:0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.login
			l.Getenv = func(k string) string { return tc.env[k] }
			k, err := KerberosLogin(hadoopConfWith(secure), l)
			require.ErrorIs(t, err, tc.is)
			require.Nil(t, k)
			for _, m := range tc.wantMsg {
				require.ErrorContains(t, err, m)
			}
		})
	}
	t.Run("simple authentication needs no login", func(t *testing.T) {
		k, err := KerberosLogin(hadoopConfWith(nil), Login{Getenv: func(string) string { return absent }})
		require.NoError(t, err)
		require.Nil(t, k)
	})
}

func TestCCachePath(t *testing.T) {
	uidDefault := "/tmp/krb5cc_" + strconv.Itoa(os.Getuid())
	for _, tc := range []struct{ env, want string }{
		{"", uidDefault},
		{"/tmp/cc", "/tmp/cc"},
		{"FILE:/tmp/cc", "/tmp/cc"},
		{"KEYRING:persistent:1000", ""},
		{"DIR:/run/user/1000/krb5cc", ""},
	} {
		t.Run(strconv.Quote(tc.env), func(t *testing.T) {
			require.Equal(t, tc.want, ccachePath(func(string) string { return tc.env }))
		})
	}
}

func TestShortName(t *testing.T) {
	for _, tc := range []struct{ principal, want string }{
		{"hadoop/localhost@EXAMPLE.COM", "hadoop"},
		{"rm/_HOST@EXAMPLE.COM", "rm"},
		{"client@EXAMPLE.COM", "client"},
		{"yarn", "yarn"},
	} {
		t.Run(tc.principal, func(t *testing.T) {
			require.Equal(t, tc.want, ShortName(tc.principal))
		})
	}
}

func TestSecureNeedsLogin(t *testing.T) {
	hc := hadoopConfWith(map[string]string{
		"hadoop.security.authentication":  "kerberos",
		"fs.defaultFS":                    "hdfs://localhost:1",
		"dfs.namenode.kerberos.principal": "nn/_HOST@EXAMPLE.COM",
	})
	_, err := DialHDFS(hc, "someone", nil)
	require.ErrorIs(t, err, yarn.ErrNoCredentials)
	require.ErrorContains(t, err, "localhost:1")
}
