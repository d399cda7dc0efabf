package k8spod

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Kubernetes name checks replaced regular expressions; these tests keep
// them equal to those expressions.
var (
	dns1123RE  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	envNameRE  = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)
	plainKeyRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._/-]*$`)
)

func checkNames(t *testing.T, s string) {
	t.Helper()
	require.Equal(t, dns1123RE.MatchString(s), isDNS1123Label(s), "DNS-1123 label %q", s)
	require.Equal(t, envNameRE.MatchString(s), isEnvName(s), "env name %q", s)
	require.Equal(t, plainKeyRE.MatchString(s), isPlainKey(s), "plain key %q", s)
}

func TestKubernetesNameChecksAsRegexp(t *testing.T) {
	for _, s := range []string{"", "a", "-", "a-", "-a", "a-b", "0", "0a", "A", "aB", "a.b", "a_b", "a/b",
		"nvidia.com/gpu", "_x", ".x", "x9", "9x", "é", "a b", strings.Repeat("a", 63), strings.Repeat("a", 64),
		"a" + strings.Repeat("-", 61) + "a", "CUDA_VISIBLE_DEVICES", "xres.io/resources"} {
		checkNames(t, s)
	}
}

func FuzzKubernetesNameChecks(f *testing.F) {
	for _, s := range []string{"worker-0", "CUDA_VISIBLE_DEVICES", "nvidia.com/gpu", "-x"} {
		f.Add(s)
	}
	f.Fuzz(checkNames)
}
