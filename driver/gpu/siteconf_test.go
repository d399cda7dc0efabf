package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSiteConfLazy: yarn-site.xml is parsed only when a question needs
// it, and answers as a full parse does.
func TestSiteConfLazy(t *testing.T) {
	var many strings.Builder
	for i := 0; i < 300; i++ {
		many.WriteString("<property><name>yarn.some.key.")
		many.WriteString(strings.Repeat("x", i%7))
		many.WriteString("</name><value>v</value></property>\n")
	}
	prop := func(k, v string) string {
		return "<property><name>" + k + "</name><value>" + v + "</value></property>\n"
	}
	tests := []struct {
		name        string
		xml         string
		https       bool
		parsedAfter bool // by httpsOnly
		plugin      bool
		known       bool
	}{
		{name: "no policy key: not parsed", xml: "<configuration>\n" + many.String() + "</configuration>", known: true},
		{name: "HTTPS_ONLY", xml: "<configuration>" + prop("yarn.http.policy", " https_only ") + "</configuration>", https: true, parsedAfter: true, known: true},
		{name: "HTTP_ONLY", xml: "<configuration>" + prop("yarn.http.policy", "HTTP_ONLY") + prop("yarn.nodemanager.resource-plugins", "yarn.io/gpu") + "</configuration>",
			parsedAfter: true, plugin: true, known: true},
		{name: "key spelled with a character reference", xml: "<configuration>" + prop("yarn.http.polic&#121;", "HTTPS_ONLY") + "</configuration>", https: true, parsedAfter: true, known: true},
		{name: "key in a CDATA section", xml: "<configuration>" + prop("yarn.http.<![CDATA[policy]]>", "HTTPS_ONLY") + "</configuration>", https: true, parsedAfter: true, known: true},
		{name: "the last definition wins", xml: "<configuration>" + prop("yarn.http.policy", "HTTPS_ONLY") + prop("yarn.http.policy", "HTTP_ONLY") + "</configuration>", parsedAfter: true, known: true},
		{name: "malformed without the key", xml: "<configuration><property><name>a</name>", known: false},
		{name: "malformed with the key", xml: "<configuration>" + prop("yarn.http.policy", "HTTPS_ONLY") + "<property>", parsedAfter: true, known: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "yarn-site.xml"), []byte(tt.xml), 0o644))
			env := func(k string) string {
				if k == "HADOOP_CONF_DIR" {
					return dir
				}
				return ""
			}
			s := readSiteConf(env)
			require.Equal(t, tt.https, s.httpsOnly())
			require.Equal(t, tt.parsedAfter, s.parsed)
			on, known := s.pluginConfigured(YarnGPU)
			require.Equal(t, tt.plugin, on)
			require.Equal(t, tt.known, known)
			require.True(t, s.parsed)
		})
	}
	s := readSiteConf(func(string) string { return "" })
	require.False(t, s.httpsOnly())
	_, known := s.pluginConfigured(YarnGPU)
	require.False(t, known, "no HADOOP_CONF_DIR")
}
