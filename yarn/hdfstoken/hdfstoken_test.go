package hdfstoken

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
)

func TestServicePrincipalFor(t *testing.T) {
	require.Equal(t, "nn/nn1.example.com", servicePrincipalFor("nn/_HOST@EXAMPLE.COM", "NN1.example.com"))
	require.Equal(t, "hadoop/localhost", servicePrincipalFor("hadoop/localhost@EXAMPLE.COM", "other"))
}

func TestTokenService(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ addr, want string }{
		{"10.1.2.3:8020", "10.1.2.3:8020"},
		{"localhost:8020", "127.0.0.1:8020"}, // IPv4 first, as Hadoop clients name it
		{"[::1]:9000", "[::1]:9000"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			got, err := TokenService(ctx, tc.addr)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	_, err := TokenService(ctx, "no-port")
	require.ErrorContains(t, err, "token service no-port")
}

func TestGetNeedsLogin(t *testing.T) {
	hc := conf.NewHadoopConfig(func(string) string { return "" })
	for k, v := range map[string]string{
		"hadoop.security.authentication":  "kerberos",
		"fs.defaultFS":                    "hdfs://localhost:1",
		"dfs.namenode.kerberos.principal": "nn/_HOST@EXAMPLE.COM",
	} {
		hc.Set(k, v)
	}
	_, err := Get(context.Background(), hc, nil, "rm", nil)
	require.ErrorIs(t, err, yarn.ErrNoCredentials)
}
