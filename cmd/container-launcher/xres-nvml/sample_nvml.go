//go:build cgo && linux

package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/xres/xres/resources/contract"
)

func init() { openReader = openNVML }

// sampleDevice is the part of an NVML device the sampler reads (nvml.Device
// has it; tests fake it).
type sampleDevice interface {
	GetUUID() (string, nvml.Return)
	GetUtilizationRates() (nvml.Utilization, nvml.Return)
	GetMemoryInfo() (nvml.Memory, nvml.Return)
	GetPowerUsage() (uint32, nvml.Return)
	GetTemperature(nvml.TemperatureSensors) (uint32, nvml.Return)
}

// nvmlReader samples GPUs through NVML; XID errors are counted from an
// event set drained at each read.
type nvmlReader struct {
	lib     nvml.Interface
	index   []string
	devs    []sampleDevice
	uuids   []string
	events  nvml.EventSet // nil: XIDs not counted (not supported)
	xids    []uint64
	byUUID  map[string]int
	closeFn func()
}

func openNVML(library string, gpus []int) (gpuReader, error) {
	var opts []nvml.LibraryOption
	if library != "" {
		opts = append(opts, nvml.WithLibraryPath(library))
	}
	lib := nvml.New(opts...)
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML unavailable: %v", ret)
	}
	r := &nvmlReader{lib: lib, xids: make([]uint64, len(gpus)), byUUID: map[string]int{}, closeFn: func() { lib.Shutdown() }}
	set, ret := lib.EventSetCreate()
	if ret == nvml.SUCCESS {
		r.events = set
	}
	for k, i := range gpus {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			r.Close()
			return nil, fmt.Errorf("GPU %d: %v", i, ret)
		}
		u, _ := d.GetUUID()
		r.index, r.devs, r.uuids = append(r.index, strconv.Itoa(i)), append(r.devs, d), append(r.uuids, u)
		r.byUUID[u] = k
		if r.events != nil {
			_ = d.RegisterEvents(uint64(nvml.EventTypeXidCriticalError), r.events) // unsupported: not counted
		}
	}
	return r, nil
}

func (r *nvmlReader) Close() {
	if r.events != nil {
		r.events.Free()
	}
	r.closeFn()
}

// Read implements gpuReader.
func (r *nvmlReader) Read(now time.Time) ([]contract.GPUSample, error) {
	for r.events != nil {
		e, ret := r.events.Wait(0)
		if ret != nvml.SUCCESS {
			break // ERROR_TIMEOUT: none waiting
		}
		if e.Device == nil {
			continue
		}
		if u, ret := e.Device.GetUUID(); ret == nvml.SUCCESS {
			if k, ok := r.byUUID[u]; ok {
				r.xids[k]++
			}
		}
	}
	out := make([]contract.GPUSample, len(r.devs))
	for k, d := range r.devs {
		out[k] = readDevice(r.index[k], r.uuids[k], d, r.xids[k], now)
	}
	return out, nil
}

// readDevice is one GPU's sample; a figure NVML cannot give stays 0.
func readDevice(index, uuid string, d sampleDevice, xids uint64, now time.Time) contract.GPUSample {
	s := contract.GPUSample{Index: index, UUID: uuid, At: now.Unix(), XIDs: xids}
	if u, ret := d.GetUtilizationRates(); ret == nvml.SUCCESS {
		s.Util = float64(u.Gpu)
	}
	if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
		s.MemMiB = float64(m.Used >> 20)
	}
	if p, ret := d.GetPowerUsage(); ret == nvml.SUCCESS {
		s.PowerW = float64(p) / 1000
	}
	if t, ret := d.GetTemperature(nvml.TEMPERATURE_GPU); ret == nvml.SUCCESS {
		s.TempC = float64(t)
	}
	return s
}
