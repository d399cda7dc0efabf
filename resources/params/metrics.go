package params

import (
	"strings"

	"github.com/xres/xres/conf"
)

// GPUJobMappingDir is the GPU driver's param naming the folder where the
// launcher writes, while the worker runs, one file per GPU it holds (named
// by the GPU's index, or index.MIG for a MIG instance) holding the
// container id: what dcgm-exporter's --hpc-job-mapping-dir reads to label
// a GPU's metrics hpc_job=<container id>. driver/gpu declares it; the
// launcher reads it.
var GPUJobMappingDir = Param{Name: "metrics.job-mapping-dir", Type: conf.TypeString}

// JobMappingDir is a resource's metrics.job-mapping-dir, trimmed; "" when
// unset.
func JobMappingDir(params map[string]string) string {
	return strings.TrimSpace(GPUJobMappingDir.Get(params))
}
