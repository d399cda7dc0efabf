package contract

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A container's key is derived from the application's secret and its id:
// one container's key does not verify another's report.
func TestContainerKey(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	a, b := ContainerKey(secret, "container_1_0001_01_000002"), ContainerKey(secret, "container_1_0001_01_000003")
	require.Len(t, a, 32)
	require.NotEqual(t, a, b)
	require.Equal(t, a, ContainerKey(secret, "container_1_0001_01_000002"))
	require.Nil(t, ContainerKey(nil, "container_1_0001_01_000002"), "no secret, no key")
	body := []byte(`{"container":"container_1_0001_01_000003","seq":1}`)
	require.False(t, VerifyReport(b, body, SignReport(a, body)), "A's key signs nothing of B's")
	require.True(t, VerifyReport(b, body, SignReport(b, body)))

	nonce := strings.Repeat("0f", NonceBytes)
	ans := []byte(`{"ready":true}`)
	sig := SignReport(b, AnswerMessage(AnswerRendezvous, "container_1_0001_01_000003", nonce, ans))
	require.True(t, VerifyReport(b, AnswerMessage(AnswerRendezvous, "container_1_0001_01_000003", nonce, ans), sig))
	require.False(t, VerifyReport(b, AnswerMessage(AnswerRendezvous, "container_1_0001_01_000003", strings.Repeat("1f", NonceBytes), ans), sig), "another request's answer")
	require.False(t, VerifyReport(b, AnswerMessage(AnswerWorkers, "container_1_0001_01_000003", nonce, ans), sig), "another kind of answer")
	require.NoError(t, CheckNonce(nonce))
	for _, bad := range []string{"", "abc", strings.Repeat("zz", NonceBytes), strings.Repeat("a", 130)} {
		require.ErrorIs(t, CheckNonce(bad), ErrBadNonce, bad)
	}
}

func TestCheckRendezvousVar(t *testing.T) {
	for _, ok := range [][2]string{
		{EnvRank, "3"}, {EnvWorldSize, "4"}, {EnvGroup, "trainer"}, {AddressesEnv("ps-0"), "nm1:7000,,[::1]:7001"},
		{EnvTorchMasterAddr, "nm1.example.com"}, {EnvTorchMasterPort, "29500"}, {EnvTorchLocalRank, "0"},
		{EnvTFConfig, `{"cluster":{"ps":["nm1:7000"]},"task":{"type":"ps","index":0}}`},
	} {
		require.NoError(t, CheckRendezvousVar(ok[0], ok[1]), ok)
	}
	for _, bad := range [][2]string{
		{"CUDA_VISIBLE_DEVICES", "0,1,2,3"}, {"LD_PRELOAD", "/tmp/x.so"}, {"PATH", "/tmp"}, {"XRES_RESOURCE_GPU_AMOUNT", "4"},
		{"XRES__ADDRESSES", "nm1:1"}, {"PATH_ADDRESSES", "nm1:1"}, {"XRES_a_ADDRESSES", "nm1:1"}, {AddressesEnv("w"), "nm1:0"}, {AddressesEnv("w"), "nm1"},
		{EnvRank, "-1"}, {EnvRank, "01"}, {EnvRank, "1\n"}, {EnvTorchMasterPort, "70000"}, {EnvTorchMasterAddr, "nm1; rm -rf /"},
		{EnvGroup, "a b"}, {EnvTFConfig, "[1]"}, {EnvGroup, strings.Repeat("a", maxRendezvousValue+1)},
	} {
		err := CheckRendezvousVar(bad[0], bad[1])
		require.ErrorIs(t, err, ErrRendezvousVar, bad)
		require.Contains(t, err.Error(), bad[0])
		if len(bad[1]) > 3 {
			require.NotContains(t, err.Error(), bad[1], "the value is not quoted")
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:S@nm1:8042/api/report?token=T":             "http://xxxxx@nm1:8042/api/report?token=xxxxx",
		"http://T@nm1:8042/api/report":                       "http://xxxxx@nm1:8042/api/report",
		"http://nm1:8042/api/rendezvous?container=c&sig=T":   "http://nm1:8042/api/rendezvous?container=c&sig=xxxxx",
		"http://nm1:8042/api/report?Access_Token=T&x=1#frag": "http://nm1:8042/api/report?Access_Token=xxxxx&x=1#xxxxx",
		"http://nm1:8042/api/report":                         "http://nm1:8042/api/report",
		"http://u:S@nm1:80%zz/?token=T":                      "http://xxxxx@nm1:80%zz/?xxxxx",
	} {
		require.Equal(t, want, RedactURL(in), in)
	}
}

func FuzzVerifyReport(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	body := []byte(`{"container":"container_1_0001_01_000002","seq":1}`)
	f.Add(body, SignReport(key, body))
	f.Add(body, "hmac-sha256=zz")
	f.Add([]byte{}, " hmac-sha256= ")
	f.Fuzz(func(t *testing.T, body []byte, sig string) {
		if VerifyReport(key, body, sig) && sig != SignReport(key, body) && strings.TrimSpace(sig) != SignReport(key, body) &&
			!strings.EqualFold(strings.TrimSpace(sig), SignReport(key, body)) {
			t.Fatalf("signature %q verified for a body it does not sign", sig)
		}
		_ = CheckNonce(sig)
	})
}

func FuzzCheckRendezvousVar(f *testing.F) {
	f.Add(EnvRank, "1")
	f.Add("XRES_W_ADDRESSES", "nm1:1,[::1]:2")
	f.Add(EnvTFConfig, `{"a":1}`)
	f.Add("CUDA_VISIBLE_DEVICES", "0")
	f.Fuzz(func(t *testing.T, name, value string) {
		if err := CheckRendezvousVar(name, value); err != nil {
			return
		}
		if strings.ContainsAny(value, "\x00\n\r") {
			t.Fatalf("%s: a control character passed", name)
		}
		switch name {
		case EnvRank, EnvWorldSize, EnvGroup, EnvTorchRank, EnvTorchWorldSize, EnvTorchLocalRank, EnvTorchLocalWorldSize,
			EnvTorchMasterAddr, EnvTorchMasterPort, EnvTFConfig:
		default:
			if !strings.HasPrefix(name, "XRES_") || !strings.HasSuffix(name, "_ADDRESSES") {
				t.Fatalf("%q passed", name)
			}
		}
	})
}

func FuzzRedactURL(f *testing.F) {
	f.Add("http://u:S@nm1:8042/api/report?token=T", "SECRETVALUE")
	f.Add("http://nm1:8042/x?a=b", "SECRETVALUE")
	f.Fuzz(func(t *testing.T, raw, secret string) {
		_ = RedactURL(raw) // never panics
		if len(secret) < 8 || strings.ContainsAny(secret, "%&=#?@/:+; ") || strings.Contains("http://u:@h:1/p?x=1&password=&token=xxxxx", secret) {
			return
		}
		// A secret in the user information or a secret-looking
		// parameter never shows.
		for _, in := range []string{"http://u:" + secret + "@h:1/p", "http://" + secret + "@h:1/p", "http://h:1/p?x=1&token=" + url.QueryEscape(secret), "http://h:1/p?password=" + url.QueryEscape(secret)} {
			if o := RedactURL(in); strings.Contains(o, secret) || strings.Contains(o, url.QueryEscape(secret)) {
				t.Fatalf("RedactURL(%q) = %q shows the secret", in, o)
			}
		}
	})
}
