package amplan

import (
	"fmt"
	"strings"
	"time"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/yarn/amstatus"
)

// Settings are what the ApplicationMaster side (am submit and am run)
// reads from the Flink configuration, read once by Load: the worker
// groups with their plans, specs, commands and environments; the
// heartbeat intervals; the fault bounds; the tracking server's address;
// the AM container; the application's name, queue and login. What comes
// after Load takes Settings (or the part it needs), not the configuration.
type Settings struct {
	// ConfPath is the Flink configuration file read ("" for none): it is
	// staged, and the workers read it under its own name.
	ConfPath string
	Groups   []PlannedGroup // in order; one unnamed group without xres.worker-groups

	Heartbeat        time.Duration // yarn.heartbeat.interval (DefaultHeartbeat)
	RequestHeartbeat time.Duration // yarn.heartbeat.container-request-interval (DefaultRequestHeartbeat)
	BlacklistExpiry  time.Duration // xres.yarn.blacklist.timeout (0: until the application ends)
	RequestTimeout   time.Duration // slot.request.timeout (0: no bound)

	Idle amstatus.IdleRule // xres.metrics.idle-* (IdleRule)

	// NullWorker is xres.bench.null-worker: the workers are started as
	// their command alone (NullWorkerLaunch), a benchmark's floor.
	NullWorker bool

	BindAddress string // rest.bind-address of the tracking server
	BindPort    string // rest.bind-port: a port, range or list (Listen)

	App AppSettings
	// Hadoop are the Hadoop keys the configuration sets through
	// flink.hadoop.* and flink.yarn.* (conf.FlinkHadoopProperties), in the
	// order they apply.
	Hadoop []conf.HadoopProperty
}

// AppSettings are the YARN application's own settings, as am submit
// asks for it.
type AppSettings struct {
	Name  string // yarn.application.name ("": the caller's default)
	Queue string // yarn.application.queue ("": the cluster's default)

	NodeLabel string   // yarn.application.node-label, trimmed ("": none)
	Tags      []string // yarn.tags, comma-separated, each trimmed, empty ones left out
	Priority  *int32   // yarn.application.priority; nil for -1 (the queue's default)

	MemoryMB int64 // jobmanager.memory.process.size, in MiB
	VCores   int32 // yarn.appmaster.vcores
	Attempts int32 // yarn.application-attempts

	MasterEnv map[string]string // containerized.master.env.*

	// Keytab and Principal are security.kerberos.login.keytab and
	// .principal ("": the ticket cache).
	Keytab, Principal string
	// Krb5Conf is security.kerberos.krb5-conf.path ("": $KRB5_CONFIG, else
	// /etc/krb5.conf).
	Krb5Conf string
	// ShipKeytab is yarn.security.kerberos.ship-local-keytab.
	ShipKeytab bool
	Tokens     TokenRenewal
}

// TokenRenewal is how an AM with a keytab renews the HDFS delegation
// tokens (Flink's security.delegation.tokens.*).
type TokenRenewal struct {
	Enabled      bool          // security.delegation.tokens.enabled
	Ratio        float64       // security.delegation.tokens.renewal.time-ratio
	RetryBackoff time.Duration // security.delegation.tokens.renewal.retry.backoff
}

// tokenRenewal reads the Kerberos and delegation token settings into a.
func tokenRenewal(cfg *conf.Config, a *AppSettings) error {
	a.Krb5Conf, _ = cfg.String(conf.KerberosKrb5Conf)
	var err error
	if a.ShipKeytab, err = cfg.Bool(conf.YarnShipLocalKeytab); err != nil {
		return err
	}
	if a.Tokens.Enabled, err = cfg.Bool(conf.DelegationTokensEnabled); err != nil {
		return err
	}
	if a.Tokens.Ratio, err = cfg.Float(conf.DelegationTokensRenewalRatio); err != nil {
		return err
	}
	if a.Tokens.Ratio <= 0 || a.Tokens.Ratio > 1 {
		return fmt.Errorf("%w: config key %s (%s): %v: want above 0, at most 1", ErrBadConfig,
			conf.DelegationTokensRenewalRatio.Key, cfg.Origin(conf.DelegationTokensRenewalRatio.Key), a.Tokens.Ratio)
	}
	if a.Tokens.RetryBackoff, err = cfg.Duration(conf.DelegationTokensRetryBackoff); err != nil {
		return err
	}
	if a.Tokens.RetryBackoff <= 0 {
		return fmt.Errorf("%w: config key %s (%s): must be positive", ErrBadConfig,
			conf.DelegationTokensRetryBackoff.Key, cfg.Origin(conf.DelegationTokensRetryBackoff.Key))
	}
	return nil
}

// labelTagsPriority reads the application's node label, tags and priority
// into a; a priority that is neither -1 nor at least 0 is refused.
func labelTagsPriority(cfg *conf.Config, a *AppSettings) error {
	label, err := cfg.String(conf.YarnApplicationNodeLabel)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	a.NodeLabel = strings.TrimSpace(label)
	tags, err := cfg.String(conf.YarnTags)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	a.Tags = nil
	for _, t := range strings.Split(tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			a.Tags = append(a.Tags, t)
		}
	}
	prio, err := cfg.Int(conf.YarnApplicationPriority)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	a.Priority = nil
	switch {
	case prio >= 0:
		p := int32(prio)
		a.Priority = &p
	case prio != -1:
		return fmt.Errorf("%w: config key %s (%s): must be -1 (the queue's default) or at least 0, got %d",
			ErrBadConfig, conf.YarnApplicationPriority.Key, cfg.Origin(conf.YarnApplicationPriority.Key), prio)
	}
	return nil
}

// Load reads the settings from cfg. workers > 0 is the --workers flag;
// parse reads a group's external resources from its view of the
// configuration (resources.Parse with the caller's options). The groups
// are planned first (PlanGroups: every group's problems at once); then the
// first problem of the other settings is returned. Every error wraps
// ErrBadConfig (or parse's error) and names its key and where its value
// came from (the AM container's errors are those am submit always gave).
func Load(cfg *conf.Config, workers int, parse func(*conf.Config) ([]resources.Spec, error)) (Settings, error) {
	s := Settings{ConfPath: cfg.Path()}
	var err error
	if s.Groups, err = PlanGroups(cfg, workers, parse); err != nil {
		return Settings{}, err
	}
	if s.Heartbeat, s.RequestHeartbeat, err = heartbeats(cfg); err != nil {
		return Settings{}, err
	}
	if s.BlacklistExpiry, s.RequestTimeout, err = faultBounds(cfg); err != nil {
		return Settings{}, err
	}
	if s.Idle, err = IdleRule(cfg); err != nil {
		return Settings{}, err
	}
	if s.NullWorker, err = cfg.Bool(conf.BenchNullWorker); err != nil {
		return Settings{}, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	// Unset stays "" (Listen's any address, any port), as before the
	// declared defaults were written down.
	s.BindAddress, _ = cfg.Get(conf.RestBindAddress.Key)
	s.BindPort, _ = cfg.Get(conf.RestBindPort.Key)
	if s.App, err = appSettings(cfg); err != nil {
		return Settings{}, err
	}
	s.Hadoop = conf.FlinkHadoopProperties(cfg)
	return s, nil
}

// Workers is the number of workers of all groups together.
func (s Settings) Workers() int {
	n := 0
	for _, g := range s.Groups {
		n += g.Plan.Workers
	}
	return n
}

// appSettings reads the application's name, queue and login and the AM
// container's size (the declared defaults: 256m, 1 vcore), attempts and
// environment. Its errors are am submit's, unwrapped.
func appSettings(cfg *conf.Config) (AppSettings, error) {
	var a AppSettings
	a.Name, _ = cfg.String(conf.YarnApplicationName)
	a.Queue, _ = cfg.String(conf.YarnApplicationQueue)
	a.Keytab, _ = cfg.String(conf.KerberosLoginKeytab)
	a.Principal, _ = cfg.String(conf.KerberosLoginPrincipal)
	a.MasterEnv = EnvFromConfig(cfg, MasterEnvPrefix)
	if err := labelTagsPriority(cfg, &a); err != nil {
		return a, err
	}
	if err := tokenRenewal(cfg, &a); err != nil {
		return a, err
	}

	mem, err := cfg.MemorySize(conf.AMProcessSize)
	if err != nil {
		return a, err
	}
	a.MemoryMB = mem >> 20
	vcores, err := cfg.Int(conf.AMVcores)
	if err != nil {
		return a, err
	}
	a.VCores = int32(vcores)
	// One attempt unless configured, as Flink without HA: an AM that fails
	// as it starts (configuration, cluster) would only fail again. With 2
	// or more a new attempt adopts the running workers (kept across
	// attempts).
	attempts, err := cfg.Int(conf.ApplicationAttempts)
	if err != nil {
		return a, err
	}
	a.Attempts = int32(attempts)
	if a.MemoryMB < 1 || a.VCores < 1 || a.Attempts < 1 {
		return a, fmt.Errorf("AM container: %s, %s and %s must be positive",
			conf.AMProcessSize.Key, conf.AMVcores.Key, conf.ApplicationAttempts.Key)
	}
	return a, nil
}

// faultBounds reads xres.yarn.blacklist.timeout and slot.request.timeout
// (Config.BlacklistExpiry and Config.RequestTimeout), neither negative.
func faultBounds(cfg *conf.Config) (blacklist, request time.Duration, err error) {
	read := func(opt conf.Option) time.Duration {
		if err != nil {
			return 0
		}
		var d time.Duration
		if d, err = cfg.Duration(opt); err != nil {
			err = fmt.Errorf("%w: %w", ErrBadConfig, err)
		} else if d < 0 {
			err = fmt.Errorf("%w: config key %s (%s): must not be negative", ErrBadConfig, opt.Key, cfg.Origin(opt.Key))
		}
		return d
	}
	blacklist, request = read(conf.BlacklistTimeout), read(conf.SlotRequestTimeout)
	return blacklist, request, err
}
