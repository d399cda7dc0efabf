package amd

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/driver/pci"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]uint64
		err  string
	}{
		{"kernel format", "cpu_cores_count 0\nunique_id 17293822569102704641\n", map[string]uint64{"cpu_cores_count": 0, "unique_id": 17293822569102704641}, ""},
		{"blank lines and spaces", "\n a  1 \n\n", map[string]uint64{"a": 1}, ""},
		{"empty", "", map[string]uint64{}, ""},
		{"negative", "domain -1\n", nil, `:1: domain: "-1" is not a decimal number`},
		{"three fields", "a 1 2\n", nil, `:1: "a 1 2" is not "name value"`},
		{"too big", "a 18446744073709551616\n", nil, `:1: a: "18446744073709551616" is not a decimal number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProperties([]byte(tt.in))
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseRocmSMI(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Card
		err  string
	}{
		{"cards sorted by number, system ignored",
			`{"card10": {"PCI Bus": "0000:0B:00.0"}, "card2": {"Unique ID": "0x1", "PCI Bus": "0000:0a:00.0"}, "system": {"Driver version": "6.8.5"}}`,
			[]Card{{Card: 2, UniqueID: 1, BusID: "0000:0a:00.0"}, {Card: 10, BusID: "0000:0b:00.0"}}, ""},
		{"not an object", `["card0"]`, nil, "not a JSON object"},
		{"card not an object", `{"card0": "x"}`, nil, "card0 is not an object"},
		{"card name", `{"cardX": {}}`, nil, `"cardX" is not a card name`},
		{"bus missing", `{"card0": {"Unique ID": "0x1"}}`, nil, `card0: "PCI Bus" %!q(<nil>) is not a PCI address`},
		{"unique id garbage", `{"card0": {"Unique ID": "zz", "PCI Bus": "0000:03:00.0"}}`, nil, `card0: "Unique ID" "zz" is not hex`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRocmSMI([]byte(tt.in))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func FuzzParseProperties(f *testing.F) {
	b, err := os.ReadFile(fourGPUs + "/" + nodes + "2/properties")
	require.NoError(f, err)
	f.Add(string(b))
	f.Add("a 1\nb x\n")
	f.Add("a\n")
	f.Fuzz(func(t *testing.T, s string) {
		props, err := ParseProperties([]byte(s))
		if err == nil {
			require.NotNil(t, props)
		}
	})
}

func FuzzParseRocmSMI(f *testing.F) {
	for _, name := range []string{"four-gpus.json", "no-unique-id.json", "bad-bus.json"} {
		b, err := os.ReadFile("testdata/rocm-smi/" + name)
		require.NoError(f, err)
		f.Add(string(b))
	}
	f.Add(`{"card0": {"PCI Bus": 7}}`)
	f.Fuzz(func(t *testing.T, s string) {
		cards, err := ParseRocmSMI([]byte(s))
		if err != nil {
			return
		}
		for i, c := range cards {
			_, ok := pci.ParseAddress(c.BusID)
			require.True(t, ok, "PCI Bus %q", c.BusID)
			if i > 0 {
				require.Less(t, cards[i-1].Card, c.Card)
			}
		}
	})
}
