package conf

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every configuration reader's refusal is one type, *Error, naming the key,
// file and line, and matching ErrInvalid; the reason stays reachable.
func TestErrorNamesKeyFileLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileFlat)
	require.NoError(t, os.WriteFile(p, []byte("a: 1\nparallelism.default: many\nxres.worker-groups: a;a\n"), 0o600))
	c, err := Load(p, []string{"yarn.application.priority=x"})
	require.NoError(t, err)

	tests := []struct {
		name       string
		err        error
		key, file  string
		line       int
		origin     string
		reasonType any
	}{
		{name: "typed value", key: ParallelismDefault.Key, file: p, line: 2, reasonType: &ValueError{}},
		{name: "worker groups", key: WorkerGroups.Key, file: p, line: 3},
		{name: "-D value", key: YarnApplicationPriority.Key, origin: OriginDynamic, reasonType: &ValueError{}},
	}
	_, tests[0].err = c.Int(ParallelismDefault)
	_, tests[1].err = c.WorkerGroupNames()
	_, tests[2].err = c.Int(YarnApplicationPriority)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, tt.err, ErrInvalid)
			var ce *Error
			require.True(t, errors.As(tt.err, &ce), "%T", tt.err)
			require.Equal(t, tt.key, ce.Key)
			require.Equal(t, tt.file, ce.File)
			require.Equal(t, tt.line, ce.Line)
			require.Equal(t, tt.origin, ce.Origin)
			require.ErrorContains(t, tt.err, "config key "+tt.key+" ("+ce.Where()+"): ")
			if tt.reasonType != nil {
				var ve *ValueError
				require.True(t, errors.As(tt.err, &ve))
			}
		})
	}
}

func TestHadoopValueError(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "yarn-site.xml"), []byte(`<configuration>
<property><name>yarn.x.enabled</name><value>maybe</value></property>
</configuration>`), 0o600))
	hc, err := LoadHadoop(dir)
	require.NoError(t, err)
	_, err = hc.GetBool("yarn.x.enabled", false)
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorIs(t, err, ErrHadoopValue)
	var ce *Error
	require.True(t, errors.As(err, &ce))
	require.Equal(t, filepath.Join(dir, "yarn-site.xml"), ce.File)
	require.Equal(t, 2, ce.Line)
	require.ErrorContains(t, err, "hadoop configuration key yarn.x.enabled ("+ce.File+":2): ")
}

// Malformed files are *Errors too: the file and line, matching ErrInvalid
// and the file's own sentinel, the message unchanged.
func TestSyntaxErrorsNameFileLine(t *testing.T) {
	dir := t.TempDir()
	site := filepath.Join(dir, "core-site.xml")
	require.NoError(t, os.WriteFile(site, []byte("<configuration>\n<property><value>x</value></property>\n</configuration>\n"), 0o600))
	_, err := LoadHadoop(dir)
	require.ErrorIs(t, err, ErrHadoopXML)
	require.ErrorIs(t, err, ErrInvalid)
	var ce *Error
	require.True(t, errors.As(err, &ce))
	require.Equal(t, site, ce.File)
	require.Equal(t, 2, ce.Line)
	require.ErrorContains(t, err, site+":2: malformed hadoop configuration: <property> without a <name>")

	_, err = ParseDynamicFile("dyn.json", []byte("{\n\"a\": 4}"))
	require.ErrorIs(t, err, ErrSyntax)
	require.ErrorIs(t, err, ErrInvalid)
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "dyn.json", ce.File)
	require.Equal(t, 2, ce.Line)
	require.ErrorContains(t, err, "dynamic file dyn.json:2: malformed flink configuration: ")
}
