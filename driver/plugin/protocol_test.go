package plugin

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
)

func TestParseOutput(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []resources.Properties
		err  string
	}{
		{"strings", `[{"index": "0", "uuid": "FPGA-1"}]`, []resources.Properties{{"index": "0", "uuid": "FPGA-1"}}, ""},
		{"numbers and booleans as written", `[{"index": 0, "mem": 1.50, "big": 18446744073709551615, "ok": true}]`,
			[]resources.Properties{{"index": "0", "mem": "1.50", "big": "18446744073709551615", "ok": "true"}}, ""},
		{"empty list", "[]\n", []resources.Properties{}, ""},
		{"surrounding whitespace", "\n  [ {\"id\": \"a\"} ]  \n", []resources.Properties{{"id": "a"}}, ""},
		{"empty output", "", nil, "want a JSON array of device objects: EOF (output starts (empty))"},
		{"null element", `[null]`, nil, "device 0 is not a JSON object: \"null\""},
		{"string element", `["0"]`, nil, `device 0 is not a JSON object`},
		{"null value", `[{"index": null}]`, nil, `device 0 property "index": want a string, number or boolean, got null`},
		{"array value", `[{"index": "0"}, {"index": ["1"]}]`, nil, `device 1 property "index": want a string, number or boolean, got an array`},
		{"empty name", `[{"": "x"}]`, nil, "device 0 has an empty property name"},
		{"two arrays", `[] []`, nil, "data after the JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseOutput([]byte(tt.in))
			if tt.err != "" {
				require.ErrorIs(t, err, ErrBadOutput)
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		p    resources.Properties
		want string
		ok   bool
	}{
		{resources.Properties{"index": "1", "uuid": "U", "address": "A"}, "U", true},
		{resources.Properties{"index": "1", "address": "A"}, "A", true},
		{resources.Properties{"index": "1", "pci": "P"}, "P", true},
		{resources.Properties{"index": "1", "uuid": " "}, "1", true},
		{resources.Properties{"id": "x"}, "x", true},
		{resources.Properties{"name": "x"}, "", false},
	}
	for _, tt := range tests {
		got, ok := Identity(tt.p)
		require.Equal(t, tt.ok, ok, tt.p)
		require.Equal(t, tt.want, got, tt.p)
	}
}

func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{`[{"index": "0"}]`, `[]`, `[{"a": 1, "b": true}]`, `{"x": 1}`, `[null]`, `[{"a": {"b": 1}}]`, "[] x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		devs, err := ParseOutput([]byte(s))
		if err != nil {
			require.ErrorIs(t, err, ErrBadOutput)
			return
		}
		require.NotNil(t, devs)
		for _, d := range devs {
			for k := range d {
				require.NotEmpty(t, k)
			}
		}
	})
}
