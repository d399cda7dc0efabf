//go:build cgo && linux

package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/require"

	"github.com/xres/xres/resources/contract"
)

type fakeDevice struct {
	util, temp, powerMW uint32
	used                uint64
	broken              bool // every call fails
}

func (d fakeDevice) ret() nvml.Return {
	if d.broken {
		return nvml.ERROR_NOT_SUPPORTED
	}
	return nvml.SUCCESS
}
func (d fakeDevice) GetUUID() (string, nvml.Return) { return "GPU-x", d.ret() }
func (d fakeDevice) GetUtilizationRates() (nvml.Utilization, nvml.Return) {
	return nvml.Utilization{Gpu: d.util}, d.ret()
}
func (d fakeDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	return nvml.Memory{Used: d.used}, d.ret()
}
func (d fakeDevice) GetPowerUsage() (uint32, nvml.Return) { return d.powerMW, d.ret() }
func (d fakeDevice) GetTemperature(s nvml.TemperatureSensors) (uint32, nvml.Return) {
	if s != nvml.TEMPERATURE_GPU {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return d.temp, d.ret()
}

// A sample holds NVML's figures in the units DCGM reports: percent, MiB,
// watts (NVML: milliwatts), °C; a figure the GPU cannot give is 0.
func TestReadDevice(t *testing.T) {
	now := time.Unix(1765000000, 0)
	s := readDevice("1", "GPU-a", fakeDevice{util: 87, temp: 61, powerMW: 312500, used: 40 << 30}, 3, now)
	require.Equal(t, contract.GPUSample{Index: "1", UUID: "GPU-a", At: 1765000000, Util: 87, MemMiB: 40960, PowerW: 312.5, TempC: 61, XIDs: 3}, s)
	s = readDevice("0", "GPU-b", fakeDevice{util: 87, broken: true}, 0, now)
	require.Equal(t, contract.GPUSample{Index: "0", UUID: "GPU-b", At: 1765000000}, s)
}

type scripted struct {
	utils []float64
	n     int
}

func (s *scripted) Read(now time.Time) ([]contract.GPUSample, error) {
	u := s.utils[s.n%len(s.utils)]
	s.n++
	return []contract.GPUSample{{Index: "0", At: now.Unix(), Util: u}}, nil
}
func (s *scripted) Close() {}

// The sample mode prints one JSON array of samples per interval, the
// first at once, --count lines in all.
func TestSampleLoop(t *testing.T) {
	var out, errb bytes.Buffer
	var waits []time.Duration
	after := func(d time.Duration) <-chan time.Time {
		waits = append(waits, d)
		c := make(chan time.Time, 1)
		c <- time.Time{}
		return c
	}
	require.Equal(t, 0, sampleLoop(&scripted{utils: []float64{10, 90}}, 7*time.Second, 3, &out, &errb, after))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, []time.Duration{7 * time.Second, 7 * time.Second}, waits)
	var got []float64
	for _, l := range lines {
		var s []contract.GPUSample
		require.NoError(t, json.Unmarshal([]byte(l), &s))
		got = append(got, s[0].Util)
	}
	require.Equal(t, []float64{10, 90, 10}, got)
}

func TestSampleArgs(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, sampleMain([]string{"--gpus", "0,x"}, &out, &errb, nil))
	require.Contains(t, errb.String(), `"x" is not a GPU index`)
	errb.Reset()
	require.Equal(t, 2, sampleMain([]string{"--gpus", "0", "--interval", "0s"}, &out, &errb, nil))
	require.Contains(t, errb.String(), "--interval")
}
