package conf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const sentinel = "xres-sentinel-secret"

func TestReadDynamicFile(t *testing.T) {
	got, err := ReadDynamicFile(filepath.Join("testdata", "dynamic", "ok.json"))
	require.NoError(t, err)
	require.Equal(t, []string{"note=a=b: c", "parallelism.default=4", "s3.secret-key=" + sentinel}, got)
}

func TestReadDynamicFileErrors(t *testing.T) {
	dir := filepath.Join("testdata", "dynamic")
	tests := []struct {
		name string
		file string
		want string
	}{
		{name: "missing", file: "absent.json", want: "read dynamic file " + filepath.Join(dir, "absent.json") + ": flink configuration not found"},
		{name: "number value", file: "number.json", want: filepath.Join(dir, "number.json") + ":2: malformed flink configuration: key parallelism.default: the value must be a JSON string"},
		{name: "truncated", file: "truncated.json", want: filepath.Join(dir, "truncated.json") + ":4: malformed flink configuration: unexpected end of JSON"},
		{name: "not JSON", file: "yaml.json", want: filepath.Join(dir, "yaml.json") + ":1: malformed flink configuration: malformed JSON"},
		{name: "key written as -D", file: "dash-d-key.json", want: filepath.Join(dir, "dash-d-key.json") + `:2: malformed flink configuration: key "-Dparallelism.default" starts with -D: write the configuration key alone ("parallelism.default")`},
		{name: "array", file: "array.json", want: filepath.Join(dir, "array.json") + ":1: malformed flink configuration: want a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadDynamicFile(filepath.Join(dir, tt.file))
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestParseDynamicFileNeverShowsValues(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{name: "bad character after a secret", data: `{"s3.secret-key": "` + sentinel + `" x}`, want: "f.json:1: malformed flink configuration: malformed JSON"},
		{name: "secret in a key", data: `{"s3.secret-key=` + sentinel + `": ""}`, want: `key "s3.secret-key…"`},
		{name: "empty key", data: `{"": "` + sentinel + `"}`, want: "want a non-empty configuration key"},
		{name: "nested object", data: "{\n\"a\": {\"b\": \"" + sentinel + "\"}}", want: "f.json:2: malformed flink configuration: key a: the value must be a JSON string"},
		{name: "trailing data", data: `{"a": "` + sentinel + `"} {}`, want: "unexpected data after the JSON object"},
		{name: "null", data: `{"a": null}`, want: "key a: the value must be a JSON string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDynamicFile("f.json", []byte(tt.data))
			require.ErrorIs(t, err, ErrSyntax)
			require.Contains(t, err.Error(), tt.want)
			require.NotContains(t, err.Error(), sentinel)
		})
	}
}

func TestParseDynamicFileLastKeyWins(t *testing.T) {
	got, err := ParseDynamicFile("f.json", []byte(`{"b": "1", " a ": "x", "b": "2", "c": ""}`))
	require.NoError(t, err)
	require.Equal(t, []string{"a=x", "b=2", "c="}, got)
}

func TestWriteDynamicFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dyn.json")
	// An existing file with wider permissions is narrowed.
	require.NoError(t, os.WriteFile(path, []byte("old content that is longer than the new one, by far, really"), 0o644))
	in := []string{"s3.secret-key=" + sentinel, "parallelism.default=2", "parallelism.default=4", "html=<a&b>", "-Dx.y=z"}
	require.NoError(t, WriteDynamicFile(path, in))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(data), `"html": "<a&b>"`)
	got, err := ReadDynamicFile(path)
	require.NoError(t, err)
	require.Equal(t, []string{"html=<a&b>", "parallelism.default=4", "s3.secret-key=" + sentinel, "x.y=z"}, got)

	require.ErrorIs(t, WriteDynamicFile(path, []string{"novalue"}), ErrSyntax)
}

func TestWithDynamicFileGivesOriginDashDAndCommandLineWins(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dyn.json")
	require.NoError(t, WriteDynamicFile(path, []string{"parallelism.default=4", "s3.secret-key=" + sentinel}))
	dyn, err := WithDynamicFile(path, []string{"parallelism.default=8"})
	require.NoError(t, err)
	cfg, err := Load(filepath.Join("testdata", "flink-conf.yaml"), dyn)
	require.NoError(t, err)
	v, _ := cfg.Get("parallelism.default")
	require.Equal(t, "8", v, "a -D on the command line wins over the file")
	v, _ = cfg.Get("s3.secret-key")
	require.Equal(t, sentinel, v)
	require.Equal(t, OriginDynamic, cfg.Origin("s3.secret-key"))

	dyn, err = WithDynamicFile("", []string{"a=b"})
	require.NoError(t, err)
	require.Equal(t, []string{"a=b"}, dyn)
	_, err = WithDynamicFile(filepath.Join(dir, "absent.json"), nil)
	require.ErrorIs(t, err, ErrConfNotFound)
}

// FuzzParseDynamicFile: the parser never panics; what it accepts loads as
// -D overrides with the same keys; its errors name the file and line.
func FuzzParseDynamicFile(f *testing.F) {
	for _, name := range []string{"ok.json", "number.json", "truncated.json", "yaml.json", "array.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", "dynamic", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"a": "1", "a": "2"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseDynamicFile("d.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "dynamic file d.json:") {
				t.Fatalf("error without file:line: %v", err)
			}
			return
		}
		cfg, err := Load("", got)
		if err != nil {
			t.Fatalf("accepted overrides do not load: %v", err)
		}
		if len(cfg.Keys()) != len(got) {
			t.Fatalf("%d overrides became %d keys", len(got), len(cfg.Keys()))
		}
	})
}
