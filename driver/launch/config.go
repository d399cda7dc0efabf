package launch

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
)

// Config is what a Loader needs to read the resource specs.
type Config struct {
	Path    string   // --conf: a file or a directory; "" = $FLINK_CONF_DIR
	Dynamic []string // -D key=value overrides
	// DynamicFile names a JSON object of -D overrides (--dynamic-file,
	// conf.ReadDynamicFile); "" for none. The Dynamic entries win over it.
	DynamicFile string
	Strict      bool // --strict
	Getenv      func(string) string
	Log         logrus.FieldLogger
}

// Loaded is what a Loader reads from the configuration.
type Loaded struct {
	Specs []resources.Spec // the enabled resources, Flink's semantics
	// DiscoveryTimeout is xres.discovery.timeout: the drivers' time limit
	// for one discovery step where a resource sets none (driver.Options.Timeout).
	DiscoveryTimeout time.Duration
	// Rescale is xres.rescale.*: how the worker learns that the
	// application's worker counts changed.
	Rescale Rescale
	// MetricsInterval is xres.metrics.interval: how often the worker's
	// GPUs are sampled (sampler.go); 0: not sampled.
	MetricsInterval time.Duration
}

// Loader reads the enabled resource specs and the launcher's settings.
// Errors are configuration errors.
type Loader func(c Config) (Loaded, error)

// loadConf finds and loads the Flink configuration, in the view of the
// worker group of XRES_WORKER_GROUP; errors are classified ErrConfig.
func loadConf(c Config) (*conf.Config, error) {
	cfg, err := loadBase(c)
	if err != nil {
		return nil, err
	}
	return forGroup(cfg, c.Getenv(conf.EnvWorkerGroup))
}

// loadBase finds and loads the Flink configuration itself, every group's
// keys as written; errors are classified ErrConfig.
func loadBase(c Config) (*conf.Config, error) {
	path, err := conf.Find(c.Path, c.Getenv)
	if err != nil {
		return nil, classify(ErrConfig, err)
	}
	dynamic, err := conf.WithDynamicFile(c.DynamicFile, c.Dynamic)
	if err != nil {
		return nil, classify(ErrConfig, err)
	}
	cfg, err := conf.Load(path, dynamic)
	if err != nil {
		return nil, classify(ErrConfig, err)
	}
	return cfg, nil
}

// forGroup is the view of worker group name (XRES_WORKER_GROUP, set by the
// AM in each worker container of a named group): its
// xres.worker-group.<name>.* keys win. "" is the configuration itself.
func forGroup(cfg *conf.Config, name string) (*conf.Config, error) {
	if name == "" {
		return cfg, nil
	}
	names, err := cfg.WorkerGroupNames()
	if err != nil {
		return nil, classify(ErrConfig, err)
	}
	if !slices.Contains(names, name) {
		return nil, classify(ErrConfig, fmt.Errorf("%s=%s names no group of %s (%s)",
			conf.EnvWorkerGroup, name, conf.WorkerGroups.Key, strings.Join(names, ";")))
	}
	return cfg.Group(name), nil
}

// LoadConfig is the default Loader: conf.Find and conf.Load, then the
// external-resource specs with Flink's semantics (resources.Parse) and
// xres.discovery.timeout.
func LoadConfig(c Config) (Loaded, error) {
	cfg, err := loadConf(c)
	if err != nil {
		return Loaded{}, err
	}
	specs, err := resources.Parse(cfg, resources.ParseOptions{Strict: c.Strict, Log: c.Log, Side: resources.SideWorker})
	if err != nil {
		return Loaded{}, classify(ErrConfig, err)
	}
	timeout, err := discoveryTimeout(cfg)
	if err != nil {
		return Loaded{}, err
	}
	rescale, err := rescaleSettings(cfg)
	if err != nil {
		return Loaded{}, classify(ErrConfig, err)
	}
	metrics, err := metricsInterval(cfg)
	if err != nil {
		return Loaded{}, classify(ErrConfig, err)
	}
	return Loaded{Specs: specs, DiscoveryTimeout: timeout, Rescale: rescale, MetricsInterval: metrics}, nil
}

// discoveryTimeout reads xres.discovery.timeout; an error is classified
// ErrConfig.
func discoveryTimeout(cfg *conf.Config) (time.Duration, error) {
	timeout, err := cfg.Duration(conf.DiscoveryTimeout)
	if err != nil {
		return 0, classify(ErrConfig, err)
	}
	return timeout, nil
}
