package gpu

import (
	"github.com/xres/xres/driver"
	"github.com/xres/xres/resources/params"
)

// jobMappingParam is read by the launcher, not the driver (docs/metrics.md).
var jobMappingParam = driver.Declare(params.GPUJobMappingDir.WithDoc("GPU driver: a folder where the launcher writes, while the worker runs, one file per GPU " +
	"it holds, named by the GPU's index (index.MIG for a MIG instance) and holding the YARN container id, as " +
	"dcgm-exporter's --hpc-job-mapping-dir reads them (its metrics then carry `hpc_job=<container id>`); removed when the " +
	"worker ends, however it ends. Unset: none written."))
