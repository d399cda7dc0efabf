package version

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{name: "no build info", want: "am (unknown)\ncommit: unknown (built outside git or with -buildvcs=false)\ntested against: " + Tested + "\n"},
		{name: "stamped", info: &debug.BuildInfo{GoVersion: "go1.23.4", Main: debug.Module{Version: "v0.3.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "859bdab1"}, {Key: "vcs.time", Value: "2026-12-02T00:10:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			want: "am v0.3.0\ncommit: 859bdab1 (2026-12-02T00:10:00Z) with uncommitted changes\ngo: go1.23.4\ntested against: " + Tested + "\n"},
		{name: "clean tree", info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}},
			want: "am (devel)\ncommit: abc\ntested against: " + Tested + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Format("am", tt.info))
		})
	}
}

// TestTestedMatchesMinicluster keeps the Hadoop version printed in step
// with the one the integration suite runs.
func TestTestedMatchesMinicluster(t *testing.T) {
	pom, err := os.ReadFile(filepath.Join("..", "..", "..", "docker", "hadoop-minicluster", "pom.xml"))
	require.NoError(t, err)
	m := regexp.MustCompile(`<hadoop.version>([^<]+)</hadoop.version>`).FindSubmatch(pom)
	require.NotNil(t, m, "hadoop.version in pom.xml")
	require.Contains(t, Tested, "Hadoop "+string(m[1])+" ")
}
