package amplan

import (
	"fmt"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn/amstatus"
)

// IdleRule reads xres.metrics.idle-threshold and xres.metrics.idle-window.
func IdleRule(cfg *conf.Config) (amstatus.IdleRule, error) {
	var r amstatus.IdleRule
	var err error
	if r.Threshold, err = cfg.Float(conf.MetricsIdleThreshold); err != nil {
		return r, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if r.Threshold <= 0 || r.Threshold > 100 {
		return r, fmt.Errorf("%w: %s=%g: want a percentage above 0, at most 100", ErrBadConfig, conf.MetricsIdleThreshold.Key, r.Threshold)
	}
	if r.Window, err = cfg.Duration(conf.MetricsIdleWindow); err != nil {
		return r, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if r.Window <= 0 {
		return r, fmt.Errorf("%w: %s=%s: want a positive duration", ErrBadConfig, conf.MetricsIdleWindow.Key, r.Window)
	}
	return r, nil
}
