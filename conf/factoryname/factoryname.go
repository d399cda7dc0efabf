// Package factoryname spells, once, the driver-factory.class names
// (external-resource.<name>.driver-factory.class) of xres's built-in
// drivers and Flink's class names they answer to. It imports nothing, so
// that the configuration (conf: Spark's translation), the resource checks
// (resources: the factory catalog `am` checks against) and the drivers
// (which register under these names) all read the same spelling.
package factoryname

// The built-in drivers' names and aliases.
const (
	// GPU is the NVIDIA GPU driver (driver/gpu); GPUFlink, Flink's GPU
	// driver factory class, names it too.
	GPU      = "xres.gpu"
	GPUFlink = "org.apache.flink.externalresource.gpu.GPUDriverFactory"
	// PCI is the PCI/FPGA driver (driver/pci); PCIFlink, Flink's FPGA
	// driver factory class, names it too.
	PCI      = "xres.pci"
	PCIFlink = "org.apache.flink.externalresource.fpga.FPGADriverFactory"
	// AMDGPU is the AMD GPU driver (driver/amd).
	AMDGPU = "xres.amd-gpu"
	// Plugin runs the device plugin its plugin param names (driver/plugin).
	Plugin = "xres.plugin"
	// PluginPrefix starts a driver-factory.class that names a device
	// plugin by its folder under the plugins root ("plugin:<dir>").
	PluginPrefix = "plugin:"
)
