package conf

// The Flink and xres options xres reads, declared once. The README's
// configuration reference is generated from these (go run ./conf/cmd/gendoc).
// Keys with <placeholders> are patterns: use Option.For to get one key.

// External resources (Flink's ExternalResourceOptions and the YARN and
// Kubernetes config-key suffixes).
var (
	ExternalResources = Register(Option{
		Key:  "external-resources",
		Type: TypeList,
		Description: "Names of the enabled external resources, ';'-separated (e.g. gpu;fpga). Only listed " +
			"names are requested or discovered. The single value none means no resources (Flink 1.13+).",
	})
	ExternalResourceAmount = Register(Option{
		Key:  "external-resource.<name>.amount",
		Type: TypeInt64,
		Description: "Amount of the resource per worker. A resource without a positive amount is " +
			"skipped with a warning (an error in strict mode); a non-integer is an error.",
	})
	ExternalResourceYarnKey = Register(Option{
		Key:  "external-resource.<name>.yarn.config-key",
		Type: TypeString,
		Description: "YARN resource type requested for the resource, e.g. yarn.io/gpu or yarn.io/fpga. " +
			"Unset: the resource is not requested from YARN (discovery still runs).",
	})
	ExternalResourceK8sKey = Register(Option{
		Key:         "external-resource.<name>.kubernetes.config-key",
		Type:        TypeString,
		Description: "Kubernetes extended resource put in the worker's requests and limits, e.g. nvidia.com/gpu.",
	})
	ExternalResourceFactory = Register(Option{
		Key:  "external-resource.<name>.driver-factory.class",
		Type: TypeString,
		Description: "Driver that discovers the resource on the worker's host; Flink's " +
			"org.apache.flink.externalresource.gpu.GPUDriverFactory names xres's GPU driver. " +
			"Unset: the resource is requested but workers get no device infos.",
	})
	ExternalResourceParam = Register(Option{
		Key:         "external-resource.<name>.param.<param>",
		Type:        TypeString,
		Description: "Driver parameter `<param>`, handed to the driver with the prefix stripped.",
	})
	DiscoveryScriptPath = Register(Option{
		Key:     "external-resource.<name>.param.discovery-script.path",
		Type:    TypeString,
		Default: "plugins/external-resource-gpu/nvidia-gpu-discovery.sh",
		Description: "Flink discovery script, called as `script <amount> <args...>`; a relative path is " +
			"resolved against $FLINK_HOME, else the working directory. When the script does not exist " +
			"the GPU driver discovers through NVML or nvidia-smi.",
	})
	DiscoveryScriptArgs = Register(Option{
		Key:  "external-resource.<name>.param.discovery-script.args",
		Type: TypeString,
		Description: "Arguments passed to the discovery script after the amount. Flink's " +
			"`--enable-coordination-mode` and `--coordination-file <path>` also switch on xres coordination.",
	})
	CoordinationEnabled = Register(Option{
		Key:     "external-resource.<name>.param.coordination.enabled",
		Type:    TypeBool,
		Default: "true",
		Description: "Reserve devices host-wide so that two workers on one host never get the same device " +
			"(built-in discovery). Set false only when the cluster isolates devices itself.",
	})
	CoordinationFile = Register(Option{
		Key:     "external-resource.<name>.param.coordination.file",
		Type:    TypeString,
		Default: "/var/tmp/xres/coordination.state",
		Description: "Host-wide reservation state file (a lock file is kept beside it). Every worker " +
			"on a host must use the same file. Flink's `--coordination-file` in discovery-script.args also sets it.",
	})
)

// Driver params of the built-in drivers (external-resource.<name>.param.*).
// Each names the drivers that read it; the keys are the drivers' own
// constants (driver/gpu, driver/pci, driver/amd, driver/plugin).
var (
	DiscoveryScriptTimeout = Register(Option{
		Key:  "external-resource.<name>.param.discovery-script.timeout",
		Type: TypeDuration,
		Description: "GPU driver: time limit of the discovery script; on expiry its whole process group is killed. " +
			"Unset: xres.discovery.timeout.",
	})
	DiscoverySource = Register(Option{
		Key:     "external-resource.<name>.param.discovery.source",
		Type:    TypeString,
		Default: "auto",
		Description: "GPU driver, built-in discovery: `auto` (NVML, else nvidia-smi where the NVIDIA library is absent), " +
			"`nvml` or `nvidia-smi`.",
	})
	NvidiaSMIPath = Register(Option{
		Key:         "external-resource.<name>.param.nvidia-smi.path",
		Type:        TypeString,
		Default:     "nvidia-smi",
		Description: "GPU driver: the nvidia-smi program, a name looked up on PATH or a path.",
	})
	NvidiaSMITimeout = Register(Option{
		Key:         "external-resource.<name>.param.nvidia-smi.timeout",
		Type:        TypeDuration,
		Description: "GPU driver: time limit of one nvidia-smi run. Unset: xres.discovery.timeout.",
	})
	NVMLLibrary = Register(Option{
		Key:         "external-resource.<name>.param.nvml.library",
		Type:        TypeString,
		Default:     "libnvidia-ml.so.1",
		Description: "GPU driver: the NVIDIA management library (NVML) to load.",
	})
	MIGStrategy = Register(Option{
		Key:     "external-resource.<name>.param.mig.strategy",
		Type:    TypeString,
		Default: "none",
		Description: "GPU driver, NVIDIA MIG: `none` hands out whole GPUs (a GPU in MIG mode too, with a warning); " +
			"`single` hands out MIG instances and needs every GPU in MIG mode with one profile; `mixed` hands out the " +
			"MIG instances of GPUs in MIG mode and the other GPUs whole. A MIG instance's infos carry its uuid (MIG-...), " +
			"which CUDA_VISIBLE_DEVICES receives.",
	})
	MIGProfile = Register(Option{
		Key:  "external-resource.<name>.param.mig.profile",
		Type: TypeString,
		Description: "GPU driver, with mig.strategy single or mixed: hand out only MIG instances of this profile, " +
			"e.g. 1g.10gb (one resource per profile, like the Kubernetes device plugin's mixed strategy).",
	})
	HealthEnabled = Register(Option{
		Key:     "external-resource.<name>.param.health.enabled",
		Type:    TypeBool,
		Default: "true",
		Description: "GPU driver, built-in discovery: leave out GPUs with pages pending retirement, row remapping " +
			"pending or failed, or lost from the bus (checked on every discovery); they are named in the log and " +
			"in the error when too few healthy GPUs remain.",
	})
	PCIVendor = Register(Option{
		Key:  "external-resource.<name>.param.vendor",
		Type: TypeString,
		Description: "PCI driver (xres.pci), required: hex vendor ids, comma-separated, e.g. 0x10ee (Xilinx/AMD), " +
			"0x8086 (Intel), 0x1172 (Altera).",
	})
	PCIDevice = Register(Option{
		Key:         "external-resource.<name>.param.device",
		Type:        TypeString,
		Description: "PCI driver: hex device ids, comma-separated, e.g. 0x5005. Unset: any device of the vendor.",
	})
	PCIClass = Register(Option{
		Key:  "external-resource.<name>.param.class",
		Type: TypeString,
		Description: "PCI driver: hex class-code prefixes, comma-separated, e.g. 0x12 (processing accelerators). " +
			"Unset: any class.",
	})
	SysfsRoot = Register(Option{
		Key:         "external-resource.<name>.param.sysfs-root",
		Type:        TypeString,
		Default:     "/sys",
		Description: "PCI and AMD GPU drivers: where sysfs is mounted (tests and demos point it at a fake tree).",
	})
	DevRoot = Register(Option{
		Key:     "external-resource.<name>.param.dev-root",
		Type:    TypeString,
		Default: "/dev",
		Description: "PCI and AMD GPU drivers: where device nodes are; a device whose render node the process " +
			"cannot open is left out. When sysfs-root is set and dev-root is not, this check is off.",
	})
	AMDSource = Register(Option{
		Key:     "external-resource.<name>.param.source",
		Type:    TypeString,
		Default: "auto",
		Description: "AMD GPU driver (xres.amd-gpu): `auto` (the KFD topology in sysfs, else rocm-smi), `kfd` " +
			"or `rocm-smi`.",
	})
	RocmSMIPath = Register(Option{
		Key:         "external-resource.<name>.param.rocm-smi.path",
		Type:        TypeString,
		Default:     "rocm-smi",
		Description: "AMD GPU driver: the rocm-smi program.",
	})
	DriverTimeout = Register(Option{
		Key:  "external-resource.<name>.param.timeout",
		Type: TypeDuration,
		Description: "AMD GPU driver (rocm-smi) and device plugins: time limit of one run; on expiry a plugin's " +
			"whole process group is killed. Unset: xres.discovery.timeout.",
	})
	VisibleDevicesVendor = Register(Option{
		Key:  "external-resource.<name>.param.visible-devices.vendor",
		Type: TypeString,
		Description: "For plugins and discovery scripts standing for GPUs: nvidia sets CUDA_VISIBLE_DEVICES, amd " +
			"ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES for the worker, none neither. Default: nvidia for xres.gpu, amd for xres.amd-gpu.",
	})
	PluginName = Register(Option{
		Key:  "external-resource.<name>.param.plugin",
		Type: TypeString,
		Description: "Device plugin (xres.plugin): a directory under the plugins root (runs `<dir>/<dir>`), " +
			"a path relative to the root, or an absolute path.",
	})
)

// xres's own options.
var (
	Strict = Register(Option{
		Key:     "xres.strict",
		Type:    TypeBool,
		Default: "false",
		Description: "Strict mode: every problem Flink only warns about (resource without amount, " +
			"duplicate config key, ...) becomes one error listing them all. Also the `--strict` flag.",
	})
	DiscoveryTimeout = Register(Option{
		Key:     "xres.discovery.timeout",
		Type:    TypeDuration,
		Default: "10 s",
		Description: "Time limit of one discovery step (discovery script, nvidia-smi, rocm-smi, device plugin), " +
			"Flink syntax (10 s, 500 ms, 1 min), for every resource whose param sets none.",
	})
)

// Options the ApplicationMaster reads (Flink's resource-manager side).
var (
	TaskManagerProcessSize = Register(Option{
		Key:  "taskmanager.memory.process.size",
		Type: TypeMemorySize,
		Description: "Total process memory of a worker: the YARN container memory (Flink's shipped " +
			"configuration uses 1728m).",
	})
	TaskManagerCPUCores = Register(Option{
		Key:         "taskmanager.cpu.cores",
		Type:        TypeFloat,
		Description: "CPU cores of a worker; rounded up to whole YARN vcores. Unset: yarn.containers.vcores.",
	})
	YarnContainerVcores = Register(Option{
		Key:         "yarn.containers.vcores",
		Type:        TypeInt,
		Default:     "-1",
		Description: "Vcores of a worker container when taskmanager.cpu.cores is unset; -1: taskmanager.numberOfTaskSlots.",
	})
	TaskManagerSlots = Register(Option{
		Key:         "taskmanager.numberOfTaskSlots",
		Type:        TypeInt,
		Default:     "1",
		Description: "Slots per worker.",
	})
	ParallelismDefault = Register(Option{
		Key:         "parallelism.default",
		Type:        TypeInt,
		Default:     "1",
		Description: "Default parallelism; with the slots per worker it sets how many workers are requested.",
	})
	SlotsMax = Register(Option{
		Key:         "slotmanager.number-of-slots.max",
		Type:        TypeInt,
		Default:     "2147483647",
		Description: "Upper bound on the slots of all workers together; no worker is requested beyond it.",
	})
	RedundantWorkers = Register(Option{
		Key:         "slotmanager.redundant-taskmanager-num",
		Type:        TypeInt,
		Default:     "0",
		Description: "Extra workers kept running beyond those needed, for faster recovery.",
	})
	YarnMaxFailedContainers = Register(Option{
		Key:         "yarn.maximum-failed-containers",
		Type:        TypeInt,
		Description: "Failed worker containers tolerated before the application fails. Unset: the number of workers initially requested.",
	})
	YarnApplicationName = Register(Option{
		Key:         "yarn.application.name",
		Type:        TypeString,
		Description: "Name of the YARN application.",
	})
	YarnApplicationQueue = Register(Option{
		Key:         "yarn.application.queue",
		Type:        TypeString,
		Description: "YARN queue the application is submitted to.",
	})
	KerberosLoginKeytab = Register(Option{
		Key:         "security.kerberos.login.keytab",
		Type:        TypeString,
		Description: "Keytab `am submit` logs in with on a Kerberized cluster (hadoop.security.authentication=kerberos), with security.kerberos.login.principal. Unset: the ticket cache ($KRB5CCNAME, else `/tmp/krb5cc_<uid>`).",
	})
	KerberosLoginPrincipal = Register(Option{
		Key:         "security.kerberos.login.principal",
		Type:        TypeString,
		Description: "Principal (user@REALM) of security.kerberos.login.keytab.",
	})
	TaskManagerEnv = Register(Option{
		Key:         "containerized.taskmanager.env.<VAR>",
		Type:        TypeString,
		Description: "Environment variable `<VAR>` set in every worker container.",
	})
	MasterEnv = Register(Option{
		Key:         "containerized.master.env.<VAR>",
		Type:        TypeString,
		Description: "Environment variable `<VAR>` set in the ApplicationMaster container.",
	})
	AMProcessSize = Register(Option{
		Key:         "jobmanager.memory.process.size",
		Type:        TypeMemorySize,
		Default:     "256m",
		Description: "Memory of the ApplicationMaster container.",
	})
	AMVcores = Register(Option{
		Key:         "yarn.appmaster.vcores",
		Type:        TypeInt,
		Default:     "1",
		Description: "Vcores of the ApplicationMaster container.",
	})
	ApplicationAttempts = Register(Option{
		Key:         "yarn.application-attempts",
		Type:        TypeInt,
		Default:     "1",
		Description: "How many times YARN starts the ApplicationMaster before the application fails.",
	})
	YarnHeartbeat = Register(Option{
		Key:         "yarn.heartbeat.interval",
		Type:        TypeInt,
		Default:     "5",
		Description: "Seconds between the ApplicationMaster's heartbeats to the ResourceManager.",
	})
	YarnRequestHeartbeat = Register(Option{
		Key:         "yarn.heartbeat.container-request-interval",
		Type:        TypeDuration,
		Default:     "500 ms",
		Description: "Heartbeat interval while containers are requested and not yet allocated (a plain number is milliseconds).",
	})
	RestBindAddress = Register(Option{
		Key:         "rest.bind-address",
		Type:        TypeString,
		Default:     "0.0.0.0",
		Description: "Address the ApplicationMaster's tracking server (status page and JSON API) binds to.",
	})
	RestBindPort = Register(Option{
		Key:         "rest.bind-port",
		Type:        TypeString,
		Default:     "0",
		Description: "Port of the tracking server: a port, a range (50100-50200) or a list (50100,50101); 0 is any free port.",
	})
)
