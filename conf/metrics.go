package conf

// The operator's view (docs/metrics.md): the launchers' GPU sampling and
// the AM's idle-GPU rule.
var (
	MetricsInterval = Register(Option{
		Key:     "xres.metrics.interval",
		Type:    TypeDuration,
		Default: "10 s",
		Description: "How often each container-launcher samples its worker's GPUs through NVML (xres-nvml: utilisation, memory used, " +
			"power, temperature, XID count) while the worker runs and reports them to the AM, which serves them at /metrics and " +
			"draws them on the tracking page. 0: no sampling.",
	})
	MetricsIdleThreshold = Register(Option{
		Key:     "xres.metrics.idle-threshold",
		Type:    TypeFloat,
		Default: "5",
		Description: "A granted GPU whose utilisation (percent) stays under this for xres.metrics.idle-window is listed as idle " +
			"(tracking page, am status, api/status, xres_gpus_idle).",
	})
	MetricsIdleWindow = Register(Option{
		Key:         "xres.metrics.idle-window",
		Type:        TypeDuration,
		Default:     "10 min",
		Description: "How long a granted GPU must stay under xres.metrics.idle-threshold to be listed as idle.",
	})
)
