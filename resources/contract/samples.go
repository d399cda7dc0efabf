package contract

// GPUSample is one GPU's figures as a container-launcher's sampler read
// them (NVML through xres-nvml): what DCGM's default counters hold. It
// travels in DeviceReport.GPU, one per GPU the worker holds, every
// xres.metrics.interval; the keys are short because a report is sent that
// often by every worker.
//
//	{"i":"0","u":"GPU-…","t":1765000000,"util":87,"mem":40960,"pw":312.5,"temp":61,"xid":0}
type GPUSample struct {
	Index string `json:"i"`           // the GPU's index (or index:MIG)
	UUID  string `json:"u,omitempty"` // the GPU's UUID
	// At is when it was read: Unix seconds on the launcher's host.
	At int64 `json:"t"`
	// Util is the GPU's utilisation in percent (DCGM_FI_DEV_GPU_UTIL).
	Util float64 `json:"util"`
	// MemMiB is the frame buffer in use, MiB (DCGM_FI_DEV_FB_USED).
	MemMiB float64 `json:"mem"`
	// PowerW is the power draw in watts (DCGM_FI_DEV_POWER_USAGE).
	PowerW float64 `json:"pw"`
	// TempC is the GPU temperature in °C (DCGM_FI_DEV_GPU_TEMP).
	TempC float64 `json:"temp"`
	// XIDs is how many XID errors NVML reported since the sampler started
	// (DCGM_FI_DEV_XID_ERRORS holds the last XID; this counts them).
	XIDs uint64 `json:"xid"`
}
