package conf

// The operator's view (docs/metrics.md): the launchers' GPU sampling and
// the AM's idle-GPU rule.
var (
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
