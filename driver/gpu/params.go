package gpu

import (
	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources/params"
)

// The GPU driver's params, declared once (driver.Declare) and read only
// through these declarations. The coordination params and
// discovery-script.args are driver/coord's, shared by every built-in driver.
var (
	scriptPathParam = driver.Declare(params.GPUScriptPath.WithDoc("GPU driver: discovery script, called as `script <amount> <args...>` (Flink's protocol: one line of " +
		"comma-separated indices) or a script printing Spark's JSON (see discovery-script.protocol); a relative " +
		"path is resolved against $FLINK_HOME, else the working directory. Unset, or Flink's default " +
		"plugins/external-resource-gpu/nvidia-gpu-discovery.sh when it is not installed: the GPU driver " +
		"discovers through NVML or nvidia-smi."))
	protocolParam = driver.Declare(params.GPUScriptProtocol.WithDoc("GPU driver: the protocol of discovery-script.path. `flink`: called as `script <amount> <args...>`, it " +
		"prints one line of comma-separated indices and picks the devices itself. `spark`: called without " +
		"arguments, it prints Spark's ResourceInformation JSON (`{\"name\":\"gpu\",\"addresses\":[\"0\",\"1\"]}`, " +
		"as Spark's getGpusResources.sh does); its addresses are the candidates and xres's coordination " +
		"(coordination.*) picks amount of them. `auto`: called as Flink's; output starting with `{` is read as Spark's."))
	scriptTimeoutParam = driver.Declare(params.GPUScriptTimeout.WithDoc("GPU driver: time limit of the discovery script; on expiry its whole process group is killed. " +
		"Unset: xres.discovery.timeout."))
	sourceParam = driver.Declare(params.GPUSource.WithDoc("GPU driver, built-in discovery: `auto` (NVML, else nvidia-smi where the NVIDIA library is absent), " +
		"`nvml` or `nvidia-smi`."))
	nvidiaSMIParam = driver.Declare(driver.Param{
		Name: ParamNvidiaSMI, Type: conf.TypeString, Default: "nvidia-smi",
		Doc: "GPU driver: the nvidia-smi program, a name looked up on PATH or a path. With a discovery script, " +
			"it confirms the host's GPU count when the script prints an index beyond the NVIDIA driver's count.",
	})
	smiTimeoutParam  = driver.Declare(params.GPUSMITimeout.WithDoc("GPU driver: time limit of one nvidia-smi run (and of one run of the xres-nvml helper). Unset: xres.discovery.timeout."))
	nvmlLibraryParam = driver.Declare(driver.Param{
		Name: ParamNVMLLibrary, Type: conf.TypeString, Default: "libnvidia-ml.so.1",
		Doc: "GPU driver: the NVIDIA management library (NVML) to load.",
	})
	migStrategyParam = driver.Declare(params.GPUMIGStrategy.WithDoc("GPU driver, NVIDIA MIG: `none` hands out whole GPUs (a GPU in MIG mode too, with a warning); " +
		"`single` hands out MIG instances and needs every GPU in MIG mode with one profile; `mixed` hands out the " +
		"MIG instances of GPUs in MIG mode and the other GPUs whole. A MIG instance's infos carry its uuid (MIG-...), " +
		"which CUDA_VISIBLE_DEVICES receives."))
	migProfileParam = driver.Declare(params.GPUMIGProfile.WithDoc("GPU driver, with mig.strategy single or mixed: hand out only MIG instances of this profile, " +
		"e.g. 1g.10gb (one resource per profile, like the Kubernetes device plugin's mixed strategy)."))
	healthParam = driver.Declare(params.GPUHealth.WithDoc("GPU driver, built-in discovery: leave out GPUs with pages pending retirement, row remapping " +
		"pending or failed, or lost from the bus (checked on every discovery); they are named in the log and " +
		"in the error when too few healthy GPUs remain."))
)

// Params lists every param the GPU driver reads.
func Params() []driver.Param {
	return []driver.Param{scriptPathParam, coord.ScriptArgsParam, protocolParam, scriptTimeoutParam, sourceParam,
		nvidiaSMIParam, smiTimeoutParam, nvmlLibraryParam, migStrategyParam, migProfileParam, healthParam,
		coord.EnabledParam, coord.FileParam, yarnAssignmentParam, yarnResourceParam, yarnCAParam, placementParam, jobMappingParam,
		coord.QuietPeriodParam, coord.ReturnProbedParam, healthActionParam, appXIDsParam}
}

// The params of YARN's GPU assignment (yarnassign.go).
var (
	yarnAssignmentParam = driver.Declare(params.GPUYarnAssignment.WithDoc("GPU driver, built-in discovery in a YARN container: `auto` asks the NodeManager's REST " +
		"(`/ws/v1/node/resources/<yarn.resource-name>`) which GPUs YARN's GPU plugin assigned to $CONTAINER_ID and hands out " +
		"exactly those (NVIDIA_VISIBLE_DEVICES where the REST does not answer); a NodeManager without the plugin leaves the " +
		"choice to host coordination; one that cannot be asked fails the launch (exit 215). `off`: never ask (host coordination)."))
	yarnResourceParam = driver.Declare(params.GPUYarnResource.WithDoc("GPU driver: the YARN resource whose NodeManager assignment is read: `yarn.io/gpu` (YARN's GPU plugin) or " +
		"`nvidia.com/gpu` (the pluggable device framework's NVIDIA plugin: its devices are matched by PCI bus id). " +
		"Unset: the resource's yarn.config-key when it is one of them, else yarn.io/gpu."))
	yarnCAParam = driver.Declare(driver.Param{
		Name: ParamYarnCAFile, Type: conf.TypeString,
		Doc: "GPU driver: PEM file of CA certificates trusted, beside the system's, for a NodeManager REST over HTTPS " +
			"(yarn.http.policy HTTPS_ONLY in $HADOOP_CONF_DIR/yarn-site.xml).",
	})
)
