//go:build linux

package gpu

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources"
)

// FuzzNVMLListing feeds arbitrary stdout of the xres-nvml helper to the
// launcher's reader and the unit selection under every MIG strategy: it
// fails cleanly or gives devices that each have a key; what the reader
// takes survives marshal and a second read unchanged.
func FuzzNVMLListing(f *testing.F) {
	l := nvmlListing{gpus: []gpuRecord{
		{info: resources.Properties{"index": "0", "uuid": "GPU-a", "name": "NVIDIA H100 80GB HBM3"}, migMode: true,
			migs: []migRecord{{uuid: "MIG-a0", index: 0, profile: "3g.40gb", info: resources.Properties{"mig.gi": "2"}}}},
		{info: resources.Properties{"index": "1", "uuid": "GPU-b"}, unhealthy: []string{ReasonRowRemapPending}},
	}, denied: []string{"2"}}
	b, err := l.marshal()
	require.NoError(f, err)
	f.Add(b)
	f.Add([]byte(`{"gpus":[]}`))
	f.Add([]byte(`{"gpus":[{"info":{"index":"0","uuid":"GPU-x"},"mig_mode":true,"migs":[{"uuid":"","index":-1,"info":null}]}],"no_mig_functions":true}`))
	f.Add([]byte(`{"gpus":[{"info":{"index":"0","uuid":"GPU-x"}},{"info":{"index":"0","uuid":"GPU-x"}}]}`))
	f.Add([]byte(`{"gpus":[{"info":{}}]}`))
	f.Add([]byte("Segmentation fault"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := unmarshalNVMLListing(b)
		if err != nil {
			return
		}
		again, err := l.marshal()
		require.NoError(t, err)
		l2, err := unmarshalNVMLListing(again)
		require.NoError(t, err, "a listing the reader took re-reads: %s", again)
		require.Equal(t, len(l.gpus), len(l2.gpus))
		for _, mig := range []string{"", MIGNone, MIGSingle, MIGMixed} {
			for _, health := range []bool{false, true} {
				l, _ := unmarshalNVMLListing(b) // devices writes into the records
				devs, err := l.devices(unitOptions{mig: mig, health: health}, nil)
				if err != nil {
					require.NotEmpty(t, err.Error())
					continue
				}
				for _, d := range devs {
					require.NotEmpty(t, strings.TrimSpace(d.Key), "mig %q: a device without a key: %+v", mig, d)
				}
			}
		}
	})
}
