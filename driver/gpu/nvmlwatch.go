//go:build cgo && linux

package gpu

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlWatchLib is the part of go-nvml's library the watch uses.
type nvmlWatchLib interface {
	nvmlLib
	EventSetCreate() (nvml.EventSet, nvml.Return)
}

// watchedEvents: what the watch registers on each GPU (as far as the GPU
// supports it).
const watchedEvents = uint64(nvml.EventTypeXidCriticalError | nvml.EventTypeDoubleBitEccError)

// watchWait is how long one EventSet.Wait blocks before the watch looks at
// its context again.
const watchWait = 1000 // ms

type watchedGPU struct {
	uuid         string
	index, minor int
	dev          nvml.Device
}

// nvmlWatch registers an event set on every GPU and writes each event to
// out as a line (HealthEvent) until ctx ends (nil) or NVML fails (the
// error, after an "error" line so the reader knows the watch is lost).
// The first line is "ready", written once every GPU is registered.
func nvmlWatch(ctx context.Context, lib nvmlWatchLib, out io.Writer, now func() time.Time) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: nvml panicked: %v", ErrNVMLUnavailable, r)
		}
		if err != nil {
			_, _ = out.Write(HealthEvent{Type: EventError, Index: -1, Minor: -1, Time: now(), Detail: err.Error()}.MarshalLine())
		}
	}()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return fmt.Errorf("%w: init: %v", ErrNVMLUnavailable, nvmlErr(ret))
	}
	defer lib.Shutdown()
	set, ret := lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvml event set: %w", nvmlErr(ret))
	}
	defer set.Free()
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("nvml device count: %w", nvmlErr(ret))
	}
	ready := HealthEvent{Type: EventReady, Index: -1, Minor: -1}
	var gpus []watchedGPU
	for i := 0; i < n; i++ {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret == nvml.ERROR_NO_PERMISSION {
			continue // not this process's GPU (device isolation)
		}
		if ret != nvml.SUCCESS {
			return fmt.Errorf("nvml device %d: %w", i, nvmlErr(ret))
		}
		uuid, ret := d.GetUUID()
		if ret != nvml.SUCCESS {
			return fmt.Errorf("nvml device %d uuid: %w", i, nvmlErr(ret))
		}
		g := watchedGPU{uuid: uuid, index: i, minor: -1, dev: d}
		if m, ret := d.GetMinorNumber(); ret == nvml.SUCCESS {
			g.minor = m
		}
		gpus = append(gpus, g)
		want := watchedEvents
		if sup, ret := d.GetSupportedEventTypes(); ret == nvml.SUCCESS {
			want &= sup
		}
		if want == 0 {
			ready.Unwatched = append(ready.Unwatched, uuid)
			continue
		}
		switch ret := d.RegisterEvents(want, set); ret {
		case nvml.SUCCESS:
			ready.Watched = append(ready.Watched, uuid)
		case nvml.ERROR_NOT_SUPPORTED:
			ready.Unwatched = append(ready.Unwatched, uuid)
		default:
			return fmt.Errorf("nvml device %d (%s): register events: %w", i, uuid, nvmlErr(ret))
		}
	}
	ready.Time = now()
	if _, err := out.Write(ready.MarshalLine()); err != nil {
		return err
	}
	for ctx.Err() == nil {
		data, ret := set.Wait(watchWait)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_TIMEOUT:
			continue
		case nvml.ERROR_GPU_IS_LOST:
			// NVML does not say which: ask each GPU.
			lost := 0
			for _, g := range gpus {
				if _, ret := g.dev.GetMemoryInfo(); ret == nvml.ERROR_GPU_IS_LOST {
					lost++
					if _, err := out.Write(g.event(EventGPULost, 0, now()).MarshalLine()); err != nil {
						return err
					}
				}
			}
			if lost == 0 {
				if _, err := out.Write(HealthEvent{Type: EventGPULost, Index: -1, Minor: -1, Time: now()}.MarshalLine()); err != nil {
					return err
				}
			}
			continue
		default:
			return fmt.Errorf("nvml event wait: %w", nvmlErr(ret))
		}
		e := HealthEvent{Index: -1, Minor: -1, Time: now()}
		for _, g := range gpus {
			if data.Device != nil && sameDevice(data.Device, g) {
				e = g.event("", 0, e.Time)
				break
			}
		}
		switch {
		case data.EventType&nvml.EventTypeXidCriticalError != 0:
			e.Type, e.XID = EventXID, data.EventData
		case data.EventType&nvml.EventTypeDoubleBitEccError != 0:
			e.Type = EventDoubleBitECC
		default:
			continue
		}
		if e.UUID == "" {
			// An event for a device not in the list: name it as NVML does.
			if data.Device == nil {
				continue
			}
			if u, ret := data.Device.GetUUID(); ret == nvml.SUCCESS {
				e.UUID = u
			} else {
				continue
			}
		}
		if _, err := out.Write(e.MarshalLine()); err != nil {
			return err
		}
	}
	return nil
}

func (g watchedGPU) event(typ string, xid uint64, t time.Time) HealthEvent {
	return HealthEvent{Type: typ, UUID: g.uuid, Index: g.index, Minor: g.minor, XID: xid, Time: t}
}

// sameDevice: the event's device is g (by uuid: handles need not compare).
func sameDevice(d nvml.Device, g watchedGPU) bool {
	u, ret := d.GetUUID()
	return ret == nvml.SUCCESS && u == g.uuid
}

// NVMLWatchMain is `xres-nvml watch [--library PATH]`: it streams the
// GPUs' health events (HealthEvent lines) to stdout until ctx ends (exit
// 0) or NVML fails (an "error" line, then exit 3 when NVML is
// unavailable, 1 otherwise).
func NVMLWatchMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(NVMLHelperName+" watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lib := fs.String("library", "", "the NVIDIA management library to load (default libnvidia-ml.so.1)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s watch: unexpected argument %q\n", NVMLHelperName, fs.Arg(0))
		return 2
	}
	var opts []nvml.LibraryOption
	if *lib != "" {
		opts = append(opts, nvml.WithLibraryPath(*lib))
	}
	if err := nvmlWatch(ctx, nvml.New(opts...), stdout, time.Now); err != nil {
		return nvmlHelperMain(nvmlListing{}, err, nil, stderr)
	}
	return 0
}
