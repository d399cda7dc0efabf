// Package amd is the built-in driver for AMD GPUs (ROCm). It lists the
// GPUs from the KFD topology in sysfs, or from rocm-smi where sysfs has no
// KFD topology, for the shared coordination layer to choose from, and
// names the environment a ROCm worker needs to see only its GPUs.
//
// Params (external-resource.<name>.param.*):
//
//	source         auto (default) | kfd | rocm-smi. auto reads the KFD topology
//	               when <sysfs-root>/class/kfd/kfd/topology/nodes exists, else runs
//	               rocm-smi when it is on PATH, else fails naming both.
//	sysfs-root     where sysfs is mounted, default /sys.
//	dev-root       where device nodes are, default /dev. A GPU whose render node
//	               (<dev-root>/dri/renderD<minor>) the process cannot open is left
//	               out, as ROCr leaves it out. When sysfs-root is set and dev-root
//	               is not, this check is off (a fake sysfs tree has no device nodes).
//	rocm-smi.path  the rocm-smi program, default "rocm-smi" on PATH.
//	timeout        how long rocm-smi may run ("10 s", "500 ms", "2 min", a bare
//	               number of milliseconds); default xres.discovery.timeout, else 10 s.
//	coordination.enabled, coordination.file
//	               host coordination, as the GPU driver: on by default.
//
// Infos per GPU: index, uuid (GPU-<16 hex digits>, absent when the GPU has
// no unique id), unique-id, pci.bus-id, and from the KFD source also
// gpu-id, kfd-node, render-node, device-id, gfx, name; numa-node and
// local-cpus when sysfs has the PCI function.
package amd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xres/xres/conf/factoryname"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/driver/pci"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/params"
)

// FactoryName is the driver-factory.class that selects this driver.
const FactoryName = factoryname.AMDGPU

// Param keys, as written after external-resource.<name>.param.
const (
	ParamSource      = "source"
	ParamSysfsRoot   = pci.ParamSysfsRoot
	ParamDevRoot     = pci.ParamDevRoot
	ParamRocmSMIPath = "rocm-smi.path"
	ParamTimeout     = "timeout"
)

// The AMD GPU driver's own params, declared once (driver.Declare) and read
// only through these declarations; sysfs-root and dev-root are the PCI
// driver's, timeout is driver.TimeoutParam.
var (
	sourceParam = driver.Declare(params.AMDSource.WithDoc("AMD GPU driver (xres.amd-gpu): `auto` (the KFD topology in sysfs, else rocm-smi), `kfd` " +
		"or `rocm-smi`."))
	rocmSMIParam = driver.Declare(driver.Param{
		Name: ParamRocmSMIPath, Type: conf.TypeString, Default: "rocm-smi",
		Doc: "AMD GPU driver: the rocm-smi program.",
	})
)

// Params lists every param the AMD GPU driver reads.
func Params() []driver.Param {
	return []driver.Param{sourceParam, pci.SysfsRootParam, pci.DevRootParam, rocmSMIParam, driver.TimeoutParam,
		coord.EnabledParam, coord.FileParam}
}

// EnvRocrVisibleDevices is ROCr's device filter: the GPUs a process may
// use, by uuid or index.
const EnvRocrVisibleDevices = "ROCR_VISIBLE_DEVICES"

// EnvHipVisibleDevices is HIP's device filter, over the GPUs ROCr leaves
// visible, numbered from 0.
const EnvHipVisibleDevices = "HIP_VISIBLE_DEVICES"

// Vendor is ROCm's vendor name (visible-devices.vendor: amd): the AMD GPU
// driver's devices, and those of any resource that names it, get
// Environment's variables.
const Vendor driver.Vendor = "amd"

// visibleOnly keeps the devices ROCR_VISIBLE_DEVICES (v) lists by uuid or
// index.
func visibleOnly(devs []driver.Device, v string) []driver.Device {
	want := map[string]bool{}
	for _, id := range strings.Split(v, ",") {
		want[strings.TrimSpace(id)] = true
	}
	var out []driver.Device
	for _, d := range devs {
		if (d.Info["uuid"] != "" && want[d.Info["uuid"]]) || want[d.Info["index"]] {
			out = append(out, d)
		}
	}
	return out
}

// Sources.
const (
	SourceAuto    = "auto"
	SourceKFD     = "kfd"
	SourceRocmSMI = "rocm-smi"
)

// DefaultTimeout bounds a rocm-smi run when neither param.timeout nor
// xres.discovery.timeout is set.
const DefaultTimeout = driver.DefaultTimeout

var (
	// ErrInvalidParam is wrapped by every error about a malformed param;
	// the message names the full config key.
	ErrInvalidParam = driver.ErrInvalidParam
	// ErrNoSource: source auto found neither a KFD topology nor rocm-smi.
	ErrNoSource = errors.New("no AMD GPU source")
)

// Enumerator lists the host's AMD GPUs. It implements driver.Enumerator.
type Enumerator struct {
	Source      string // auto, kfd or rocm-smi
	SysfsRoot   string // "/sys" when empty
	DevRoot     string // "" skips the render-node check
	RocmSMIPath string
	Timeout     time.Duration
	Log         logrus.FieldLogger
	// Visible is ROCR_VISIBLE_DEVICES as the launcher found it: when set, a
	// parent (a container, a scheduler) gave this process only those GPUs
	// (uuids or ROCr indices), and only they are candidates.
	Visible string
	// open checks that a render node can be opened; nil uses the file
	// system. Tests replace it.
	open func(path string) error
}

var _ driver.Enumerator = (*Enumerator)(nil)

// New builds an Enumerator from a resource's options, validating params.
func New(opts driver.Options) (*Enumerator, error) {
	timeout, err := driver.TimeoutParam.Timeout(opts.Resource, opts.Params, opts.Timeout)
	if err != nil {
		return nil, err
	}
	source, err := sourceParam.Choice(opts.Resource, opts.Params)
	if err != nil {
		return nil, err
	}
	sysfs, dev := pci.SysfsRootDevRoot(opts.Params)
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return &Enumerator{Source: source, SysfsRoot: sysfs, DevRoot: dev, RocmSMIPath: rocmSMIParam.Get(opts.Params),
		Timeout: timeout, Log: opts.Log, Visible: getenv(EnvRocrVisibleDevices)}, nil
}

// NewFactory returns the AMD GPU driver factory: the Enumerator behind the
// shared coordinated selection layer.
func NewFactory() driver.Factory {
	f := coord.Factory(New)
	f.Check = params.CheckAMD // New's checks, which am runs without the driver
	return factory{f}
}

// factory is the AMD GPU driver's factory: its devices are selected for
// the worker by ROCm's variables (Vendor), and it coordinates
// like every built-in driver (coord.EnumFactory).
type factory struct{ *coord.EnumFactory }

var (
	_ driver.VendorReporter       = factory{}
	_ driver.CoordinationReporter = factory{}
)

// Vendor implements driver.VendorReporter.
func (factory) Vendor() driver.Vendor { return Vendor }

// Environment implements driver.VendorReporter.
func (factory) Environment(devices []resources.Info) map[string]string { return Environment(devices) }

// Register adds the AMD GPU driver to r as FactoryName.
func Register(r *driver.Registry) error {
	return r.Register(FactoryName, NewFactory())
}

// Enumerate implements driver.Enumerator: every usable GPU in ROCr's order,
// keyed by uuid where the GPU has one, else by PCI bus id.
func (e *Enumerator) Enumerate(ctx context.Context) ([]driver.Device, error) {
	source, err := e.source()
	if err != nil {
		return nil, err
	}
	var devs []driver.Device
	switch source {
	case SourceKFD:
		devs, err = e.fromKFD(ctx)
	default:
		devs, err = e.fromRocmSMI(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("amd gpu: %w", err)
	}
	if v := strings.TrimSpace(e.Visible); v != "" {
		devs = visibleOnly(devs, v)
		if len(devs) == 0 {
			return nil, fmt.Errorf("amd gpu: none of the GPUs %s lists (%s=%s) is usable: %w", source, EnvRocrVisibleDevices, v, driver.ErrNotEnoughDevices)
		}
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("amd gpu: %s lists no usable GPU: %w", source, driver.ErrNotEnoughDevices)
	}
	driver.LoggerOrDiscard(e.Log).WithFields(logrus.Fields{"source": source, "gpus": len(devs)}).Debug("amd gpu: enumerated")
	return devs, nil
}

// source resolves auto: KFD topology first, rocm-smi second.
func (e *Enumerator) source() (string, error) {
	if e.Source == SourceKFD || e.Source == SourceRocmSMI {
		return e.Source, nil
	}
	kfd := filepath.Join(e.sysfsRoot(), KFDNodesDir)
	if _, err := os.Stat(kfd); err == nil {
		return SourceKFD, nil
	}
	if _, err := exec.LookPath(e.RocmSMIPath); err == nil {
		return SourceRocmSMI, nil
	}
	return "", fmt.Errorf("amd gpu: no KFD topology at %s (is the amdgpu driver loaded?) and no %s on PATH: %w", kfd, e.RocmSMIPath, ErrNoSource)
}

func (e *Enumerator) sysfsRoot() string {
	if e.SysfsRoot == "" {
		return "/sys"
	}
	return e.SysfsRoot
}

func (e *Enumerator) fromKFD(ctx context.Context) ([]driver.Device, error) {
	nodes, err := ReadTopology(e.sysfsRoot())
	if err != nil {
		return nil, err
	}
	log := driver.LoggerOrDiscard(e.Log)
	var devs []driver.Device
	for _, n := range nodes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !n.IsGPU() {
			continue
		}
		render := fmt.Sprintf("/dev/dri/renderD%d", n.RenderMinor())
		if e.DevRoot != "" {
			path := filepath.Join(e.DevRoot, "dri", fmt.Sprintf("renderD%d", n.RenderMinor()))
			usable, err := e.usable(path)
			if err != nil {
				return nil, fmt.Errorf("kfd node %d: %w", n.ID, err)
			}
			if !usable {
				log.WithFields(logrus.Fields{"kfd_node": n.ID, "render_node": path, "pci_bus_id": n.PCIBusID()}).Debug("amd gpu: render node not accessible, GPU left out")
				continue
			}
		}
		p := resources.Properties{
			"index":       strconv.Itoa(len(devs)),
			"pci.bus-id":  n.PCIBusID(),
			"gpu-id":      strconv.FormatUint(uint64(n.GPUID), 10),
			"kfd-node":    strconv.Itoa(n.ID),
			"render-node": render,
		}
		if id, ok := n.Properties["device_id"]; ok {
			p["device-id"] = fmt.Sprintf("0x%04x", id)
		}
		if gfx := n.GFX(); gfx != "" {
			p["gfx"] = gfx
		}
		if n.Name != "" {
			p["name"] = n.Name
		}
		setUniqueID(p, n.UniqueID())
		if err := e.addLocality(p); err != nil {
			return nil, err
		}
		devs = append(devs, driver.Device{Key: deviceKey(p), Info: p})
	}
	return devs, nil
}

func (e *Enumerator) fromRocmSMI(ctx context.Context) ([]driver.Device, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	out, err := runRocmSMI(ctx, e.RocmSMIPath, timeout)
	if err != nil {
		return nil, err
	}
	cards, err := ParseRocmSMI(out)
	if err != nil {
		return nil, err
	}
	devs := make([]driver.Device, 0, len(cards))
	for i, c := range cards {
		p := resources.Properties{
			"index":      strconv.Itoa(i),
			"pci.bus-id": c.BusID,
			"card":       "card" + strconv.Itoa(c.Card),
		}
		setUniqueID(p, c.UniqueID)
		if err := e.addLocality(p); err != nil {
			return nil, err
		}
		devs = append(devs, driver.Device{Key: deviceKey(p), Info: p})
	}
	return devs, nil
}

// setUniqueID adds uuid and unique-id for a GPU that has a unique id.
func setUniqueID(p resources.Properties, id uint64) {
	if id == 0 {
		return
	}
	p["unique-id"] = fmt.Sprintf("0x%016x", id)
	p["uuid"] = fmt.Sprintf("GPU-%016x", id)
}

// deviceKey is the host-wide coordination key: uuid, else PCI bus id.
func deviceKey(p resources.Properties) string {
	if u := p["uuid"]; u != "" {
		return u
	}
	return p["pci.bus-id"]
}

// addLocality adds numa-node and local-cpus from the GPU's PCI function,
// when sysfs has it.
func (e *Enumerator) addLocality(p resources.Properties) error {
	addr := p["pci.bus-id"]
	if _, err := os.Stat(filepath.Join(e.sysfsRoot(), pci.DevicesDir, addr)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	f, err := pci.ReadFunction(e.sysfsRoot(), addr)
	if err != nil {
		return err
	}
	if f.NUMANode >= 0 {
		p["numa-node"] = strconv.Itoa(f.NUMANode)
	}
	if f.LocalCPUs != "" {
		p["local-cpus"] = f.LocalCPUs
	}
	return nil
}

// usable reports whether the render node can be opened. Missing (not in
// this container) and permission denied (device cgroup) mean "not ours";
// anything else is an error.
func (e *Enumerator) usable(path string) (bool, error) {
	open := e.open
	if open == nil {
		open = pci.OpenDevice
	}
	err := open(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EPERM):
		return false, nil
	default:
		return false, fmt.Errorf("open %s: %w", path, pci.PathCause(err))
	}
}

// Environment returns the variables a ROCm worker needs to see exactly
// the given GPUs:
//
//	ROCR_VISIBLE_DEVICES  the GPUs' uuids when every GPU has one (they do
//	                      not depend on numbering), else their indices
//	HIP_VISIBLE_DEVICES   0,1,…,n-1: HIP numbers the GPUs ROCr left
//	                      visible from 0, so the host indices would be
//	                      wrong here; set anyway so that an inherited value
//	                      cannot hide the granted GPUs
//
// GPUs with neither uuid nor index are left out. No GPUs, no variables.
func Environment(infos []resources.Info) map[string]string {
	var uuids, indices []string
	for _, in := range infos {
		if u, ok := in.Property("uuid"); ok && u != "" {
			uuids = append(uuids, u)
		}
		if i, ok := in.Property("index"); ok && i != "" {
			indices = append(indices, i)
		}
	}
	ids := indices
	if len(uuids) == len(infos) {
		ids = uuids
	}
	if len(ids) == 0 {
		return nil
	}
	hip := make([]string, len(ids))
	for i := range ids {
		hip[i] = strconv.Itoa(i)
	}
	return map[string]string{
		EnvRocrVisibleDevices: strings.Join(ids, ","),
		EnvHipVisibleDevices:  strings.Join(hip, ","),
	}
}
