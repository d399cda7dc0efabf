package amcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/am"
	"github.com/xres/xres/yarn/ammetrics"
	"github.com/xres/xres/yarn/amnm"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstate"
	"github.com/xres/xres/yarn/amweb"
	"github.com/xres/xres/yarn/hdfstoken"
	"github.com/xres/xres/yarn/security"
	"github.com/xres/xres/yarn/submit"
)

// amClients are the cluster clients the ApplicationMaster runs on.
type amClients struct {
	RM           am.RMClient
	NM           amnm.NMClient
	Logs         amnm.LogFetcher // may be nil
	NodeWeb      string          // the NodeManagers' web scheme (https under HTTPS_ONLY): the tracking page links container logs there
	WorkerTokens []byte          // HDTS credentials for the workers (the AM's, less the AMRMToken); nil if none
	// Tokens, when set, gives the newest worker credentials at each
	// container start (an AM with a keytab renews them); WorkerTokens are
	// then only the first.
	Tokens func() []byte
	// Renew runs the token loop until ctx ends (hdfstoken.Renewer: new
	// tokens with a keytab, a warning near the max lifetime without); may be nil.
	Renew func(ctx context.Context)
	// ReportSecret is the application's report secret (in WorkerTokens):
	// the tracking server records only device reports signed with it.
	ReportSecret []byte
	// ProxyHosts and ProxyURL are the RM's web proxy (am.WebProxy): the
	// tracking page is served to it alone; ProxyURL "": to every caller.
	ProxyHosts []string
	ProxyURL   string
	// RMMaxWait and RMRetryInterval: how the AM waits out an unreachable RM
	// (yarn.RMConnectPolicy); zero: am's defaults, Hadoop's.
	RMMaxWait, RMRetryInterval time.Duration
	// Cleanup removes the staging folder once the application is over
	// (the client does it too when it follows the application); may be nil.
	Cleanup func(ctx context.Context, dir string) error
	// State keeps the AM's state for a next attempt (the staging folder's
	// amstate.File); nil where the AM cannot write there.
	State amstate.Store
	// Nodes lists the cluster's nodes for the hopeless check; nil where
	// the AM cannot reach the RM's client protocol.
	Nodes am.NodeLister
	Close func()
}

// deps are the cluster clients am is wired to (defaultDeps); tests leave
// out what they do not use, and a command needing a missing one fails
// with errNotWired.
type deps struct {
	amClients  func(ctx context.Context, getenv func(string) string, ae submit.AMEnv, set amplan.Settings, log logrus.FieldLogger) (amClients, error)
	rm         func(ctx context.Context, getenv func(string) string, log logrus.FieldLogger, l *login) (rmAPI, *conf.HadoopConfig, func(), error)
	rmREST     func(ctx context.Context, getenv func(string) string, log logrus.FieldLogger, l *login) (rmAPI, *conf.HadoopConfig, func(), error)
	hdfs       func(hc *conf.HadoopConfig, user string, krb *yarn.Kerberos) (submit.FS, func(), error)
	executable func() (string, error)               // this binary (os.Executable)
	after      func(time.Duration) <-chan time.Time // polling waits; nil: time.After
	http       *http.Client                         // AM status requests; nil: http.DefaultClient
}

// defaultDeps wires the real clients.
func defaultDeps() deps {
	return deps{amClients: rpcAMClients, rm: rpcRM, rmREST: restRM, hdfs: rpcHDFS, executable: os.Executable}
}

// amHadoopConfig is the Hadoop configuration the AM runs on: what the
// cluster says, never the built-in defaults where the cluster says otherwise.
// In order, each over the one before:
//
//  1. Hadoop's defaults (conf.NewHadoopConfig);
//  2. the configuration its client resolved, shipped whole
//     (ae.HadoopConf, submit.HadoopConfName): the RM's addresses, its web
//     addresses and web proxy (yarn.web-proxy.address), yarn.http.policy,
//     fs.defaultFS, as on the submitting host;
//  3. the node's own ($HADOOP_CONF_DIR, else $YARN_CONF_DIR, in the AM
//     container when the NodeManager passes it: yarn.nodemanager.env-whitelist
//     or admin-env): every key it sets wins, since it is the node where the
//     AM runs that knows it (under the AMRMProxy, YARN Federation's path,
//     yarn.resourcemanager.scheduler.address there is the NodeManager's
//     AMRMProxy, which also replaced the AM's AMRMToken with its own);
//  4. the job's flink.hadoop.* and flink.yarn.* keys (hadoop:
//     amplan.Settings.Hadoop), as Flink applies them.
//
// With neither 2 nor 3 (a submission by an older client) it falls back on
// the scheduler addresses and fs.defaultFS the client passed, never on the
// built-in default 0.0.0.0:8030. known is false then: the other addresses
// (the RM's client protocol, its web proxy) are Hadoop's defaults, not the
// cluster's.
func amHadoopConfig(getenv func(string) string, ae submit.AMEnv, hadoop []conf.HadoopProperty, log logrus.FieldLogger) (hc *conf.HadoopConfig, sched []string, known bool, err error) {
	var shipped []conf.HadoopProperty
	if ae.HadoopConf != "" {
		path := ae.HadoopConf
		if !filepath.IsAbs(path) && getenv("PWD") != "" {
			path = filepath.Join(getenv("PWD"), path)
		}
		if shipped, err = submit.ReadShippedHadoopConf(path); err != nil {
			return nil, nil, false, fmt.Errorf("%s=%s: %w", submit.EnvHadoopConf, ae.HadoopConf, err)
		}
	}
	node, err := conf.LoadHadoopOptions(conf.HadoopOptions{Getenv: getenv, Log: log})
	switch {
	case err == nil:
		hc = node
		// The client's keys fill in what the node's files leave unset.
		var fill []conf.HadoopProperty
		for _, p := range shipped {
			if src, ok := node.Source(p.Name); !ok || src == conf.HadoopSourceDefault {
				fill = append(fill, p)
			}
		}
		hc.ApplyProperties(fill)
		log.WithFields(logrus.Fields{"node_conf": node.Dir(), "client_keys": len(fill)}).Info("hadoop configuration: the node's, with the client's keys it leaves unset")
	case !errors.Is(err, conf.ErrNoHadoopConf):
		return nil, nil, false, err
	case len(shipped) > 0:
		hc = conf.NewHadoopConfig(getenv)
		hc.ApplyProperties(shipped)
		log.WithField("client_keys", len(shipped)).Info("hadoop configuration: the client's (no HADOOP_CONF_DIR in the container)")
	case len(ae.SchedulerAddresses) > 0:
		hc = conf.NewHadoopConfig(getenv)
		if ae.DefaultFS != "" {
			hc.Set(conf.HadoopDefaultFS, ae.DefaultFS)
		}
	default:
		return nil, nil, false, err
	}
	known = err == nil || len(shipped) > 0
	if set := hc.ApplyProperties(hadoop); len(set) > 0 {
		log.WithField("keys", strings.Join(set, ",")).Info("hadoop configuration: keys set by flink.hadoop.* / flink.yarn.*")
	}
	if !known {
		log.WithField("scheduler", strings.Join(ae.SchedulerAddresses, ",")).Info("no HADOOP_CONF_DIR in the container and no configuration shipped; using the addresses the client passed")
		return hc, ae.SchedulerAddresses, false, nil
	}
	sched, err = yarn.RMAddresses(hc, yarn.RMScheduler)
	if err != nil {
		return nil, nil, false, err
	}
	log.WithField("scheduler", strings.Join(sched, ",")).Info("hadoop configuration: scheduler address")
	return hc, sched, true, nil
}

// jobSchedulerAddresses are the RM scheduler addresses the job's AM is to
// reach: the client's cluster configuration with the job's flink.hadoop.* /
// flink.yarn.* keys (hadoop: amplan.Settings.Hadoop) over it (hc itself
// unchanged); nil when it names none.
func jobSchedulerAddresses(hc *conf.HadoopConfig, hadoop []conf.HadoopProperty) []string {
	job := hc.Clone()
	job.ApplyProperties(hadoop)
	addrs, _ := yarn.RMAddresses(job, yarn.RMScheduler)
	return addrs
}

// jobRMAddresses are the RM client-protocol addresses (yarn.resourcemanager.address,
// per RM id with HA) of the job's cluster, as jobSchedulerAddresses; nil when
// it names none.
func jobRMAddresses(hc *conf.HadoopConfig, hadoop []conf.HadoopProperty) []string {
	job := hc.Clone()
	job.ApplyProperties(hadoop)
	addrs, _ := yarn.RMAddresses(job, yarn.RMClient)
	return addrs
}

// rpcAMClients builds the Hadoop RPC clients of an AM in its YARN
// container: scheduler addresses from $HADOOP_CONF_DIR, the AMRMToken from
// $HADOOP_TOKEN_FILE_LOCATION.
func rpcAMClients(ctx context.Context, getenv func(string) string, ae submit.AMEnv, set amplan.Settings, log logrus.FieldLogger) (amClients, error) {
	hc, addrs, known, err := amHadoopConfig(getenv, ae, set.Hadoop, log)
	if err != nil {
		return amClients{}, err
	}
	maxWait, retry, err := yarn.RMConnectPolicy(hc)
	if err != nil {
		return amClients{}, err
	}
	path := getenv("HADOOP_TOKEN_FILE_LOCATION")
	if path == "" {
		return amClients{}, fmt.Errorf("read AMRMToken: HADOOP_TOKEN_FILE_LOCATION is not set (am run runs in the AM container YARN starts)")
	}
	creds, err := security.ReadTokenFile(path)
	if err != nil {
		return amClients{}, fmt.Errorf("read AMRMToken: %w", err)
	}
	tok := creds.Select(security.KindAMRMToken, "")
	if tok == nil {
		return amClients{}, fmt.Errorf("read AMRMToken: no %s token in %s", security.KindAMRMToken, path)
	}
	rm, err := yarn.NewAMRMClient(yarn.AMConfig{Addrs: addrs, Token: tok, Log: log})
	if err != nil {
		return amClients{}, err
	}
	proxyHosts, proxyURL, err := webProxy(hc, addrs)
	if err != nil {
		return amClients{}, err
	}
	workerTokens, secret, err := workerCredentials(creds, log)
	if err != nil {
		return amClients{}, err
	}
	nm := yarn.NewNMClient(yarn.NMConfig{Log: log})
	cleanup := func(ctx context.Context, dir string) error {
		fs, closeFS, err := rpcHDFS(hc, yarn.CurrentUser(getenv), nil)
		if err != nil {
			return err
		}
		defer closeFS()
		return submit.Stager{FS: fs}.Cleanup(ctx, dir)
	}
	krb := amKerberos(getenv, ae, set.App, hc, log)
	kerberized := creds.Select(security.KindHDFSDelegation, "") != nil
	var state *stagingState
	if kerberized {
		// A Kerberized cluster: the HDFS client cannot authenticate with a
		// delegation token, so without a keytab login the submitting client
		// removes the folder (and a next attempt of the AM has no saved
		// state).
		cleanup = nil
		if krb != nil {
			cleanup = func(ctx context.Context, dir string) error {
				fs, closeFS, err := rpcHDFS(hc, "", krb)
				if err != nil {
					return err
				}
				defer closeFS()
				return submit.Stager{FS: fs}.Cleanup(ctx, dir)
			}
		}
	} else if ae.StagingDir != "" {
		state = &stagingState{dir: ae.StagingDir, dial: func() (stateFS, func(), error) {
			c, err := submit.DialHDFS(hc, yarn.CurrentUser(getenv), nil)
			if err != nil {
				return nil, nil, err
			}
			return hdfsStateFS{c}, func() { _ = c.Close() }, nil
		}}
	}
	var stateStore amstate.Store
	closeState := func() {}
	if state != nil {
		stateStore, closeState = state, state.Close
	}
	// The node list comes over the RM's client protocol, with SIMPLE
	// authentication: on a Kerberized cluster the AM has no ticket for it,
	// and compares the blacklist with the RM's count of NodeManagers.
	var nodes am.NodeLister
	if !kerberized {
		caddrs, err := yarn.RMAddresses(hc, yarn.RMClient)
		if !known {
			// No configuration in the container nor shipped: the
			// addresses the client passed, else none (Hadoop's default
			// 0.0.0.0:8032 may be another cluster's RM, or none, costing
			// the heartbeat retries).
			caddrs, err = ae.RMAddresses, nil
		}
		if len(caddrs) > 0 && err == nil {
			if c, err := yarn.NewClient(yarn.ClientConfig{Addrs: caddrs, User: yarn.CurrentUser(getenv), Log: log}); err == nil {
				nodes = c
				prev := closeState
				closeState = func() { prev(); _ = c.Close() }
			}
		}
	}
	var tokens func() []byte
	var renew func(context.Context)
	if kerberized {
		r := &hdfstoken.Renewer{Base: creds, Ratio: set.App.Tokens.Ratio, RetryBackoff: set.App.Tokens.RetryBackoff, Log: log}
		if krb != nil && set.App.Tokens.Enabled {
			rmPrincipal, _ := hc.Get(conf.HadoopRMPrincipal)
			r.Source = &hdfstoken.KerberosSource{HC: hc, Krb: krb, Renewer: submit.ShortName(rmPrincipal), Self: submit.KerberosUser(krb), Log: log}
			tokens = r.Tokens
		}
		renew = r.Run
	}
	return amClients{
		Nodes:        nodes,
		State:        stateStore,
		Tokens:       tokens,
		Renew:        renew,
		Cleanup:      cleanup,
		RM:           am.NewRPCRMClient(rm),
		NM:           amnm.NewRPCNMClient(nm),
		Logs:         amnm.NMWebLogs{User: getenv("USER"), Scheme: nmScheme(hc)},
		NodeWeb:      nmScheme(hc),
		WorkerTokens: workerTokens,
		ReportSecret: secret,
		ProxyHosts:   proxyHosts,
		ProxyURL:     proxyURL,
		Close:        func() { _ = rm.Close(); _ = nm.Close(); closeState() },

		RMMaxWait:       maxWait,
		RMRetryInterval: retry,
	}, nil
}

// nmScheme is the scheme of the NodeManagers' web addresses the RM hands
// out with containers: https under yarn.http.policy HTTPS_ONLY.
func nmScheme(hc *conf.HadoopConfig) string {
	if yarn.WebappHTTPS(hc) {
		return "https"
	}
	return "http"
}

// amKerberos logs the AM in from the keytab am submit shipped (ae.Keytab,
// as security.kerberos.login.principal, with the shipped krb5.conf, else
// $KRB5_CONFIG, else /etc/krb5.conf); nil without one, or on a cluster
// with simple authentication. A login that fails is a warning: the AM then
// runs on the submission's token, as without a keytab.
func amKerberos(getenv func(string) string, ae submit.AMEnv, app amplan.AppSettings, hc *conf.HadoopConfig, log logrus.FieldLogger) *yarn.Kerberos {
	if ae.Keytab == "" {
		return nil
	}
	if !submit.Secure(hc) {
		log.Warn("a keytab was shipped but the AM's Hadoop configuration does not say hadoop.security.authentication=kerberos " +
			"(no HADOOP_CONF_DIR in its container? flink.hadoop.* keys set it, with dfs.namenode.kerberos.principal and yarn.resourcemanager.principal): " +
			"the AM cannot obtain new HDFS delegation tokens")
		return nil
	}
	if app.Principal == "" {
		log.Warnf("a keytab was shipped but %s is not set: the AM cannot obtain new HDFS delegation tokens", conf.KerberosLoginPrincipal.Key)
		return nil
	}
	krb, err := submit.KerberosLogin(hc, submit.Login{Keytab: ae.Keytab, Principal: app.Principal, Krb5Conf: ae.Krb5Conf, Getenv: getenv})
	if err != nil {
		log.WithError(err).Warn("could not log in with the shipped keytab: the AM cannot obtain new HDFS delegation tokens")
		return nil
	}
	log.WithField("principal", app.Principal).Info("logged in from the shipped keytab: the AM obtains new HDFS delegation tokens before they expire")
	return krb
}

// workerCredentials returns what the workers get of the AM's credentials
// creds (HDFS delegation tokens on a secure cluster, the report secret;
// never the AMRMToken), in token storage format, and the application's
// report secret. An AM whose credentials hold no secret (a submission by
// another client) makes one for this attempt: the workers it starts get
// it; reports of workers an earlier attempt started are then refused
// (their devices still reach this AM through their kept report file).
// creds loses its AMRMToken.
func workerCredentials(creds *security.Credentials, log logrus.FieldLogger) ([]byte, []byte, error) {
	for _, alias := range creds.Aliases() {
		if t := creds.Token(alias); t != nil && t.Kind == security.KindAMRMToken {
			creds.Remove(alias)
		}
	}
	secret := creds.Secret(contract.ReportSecretAlias)
	if len(secret) == 0 {
		var err error
		if secret, err = submit.NewReportSecret(); err != nil {
			return nil, nil, err
		}
		creds.AddSecret(contract.ReportSecretAlias, secret)
		log.WithField("secret_key", contract.ReportSecretAlias).Warn("the AM's credentials hold no report secret (not submitted by am submit?): made one for the workers this attempt starts")
	}
	b, err := creds.Marshal(security.FormatWritable)
	if err != nil {
		return nil, nil, fmt.Errorf("pass credentials to workers: %w", err)
	}
	return b, secret, nil
}

// webProxy returns the RM's web proxy hosts and its base URL
// (yarn.WebProxyURLs), where the tracking page is served; a wildcard host
// (the built-in 0.0.0.0 of an AM container without its own
// HADOOP_CONF_DIR) is taken to be the host of the scheduler address the
// AM reaches (sched[0]).
func webProxy(hc *conf.HadoopConfig, sched []string) ([]string, string, error) {
	urls, err := yarn.WebProxyURLs(hc)
	if err != nil {
		return nil, "", err
	}
	var hosts []string
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return nil, "", fmt.Errorf("web proxy %s: %w", raw, err)
		}
		host := u.Hostname()
		if ip := net.ParseIP(host); (ip != nil && ip.IsUnspecified()) || host == "" {
			if len(sched) == 0 {
				return nil, "", fmt.Errorf("%w: web proxy %s: a wildcard host, and no scheduler address to take the RM's host from", yarn.ErrRMConfig, raw)
			}
			if host, _, err = net.SplitHostPort(sched[0]); err != nil {
				return nil, "", fmt.Errorf("%w: scheduler address %q: %w", yarn.ErrRMConfig, sched[0], err)
			}
			u.Host = net.JoinHostPort(host, u.Port())
			urls[i] = u.String()
		}
		hosts = append(hosts, host)
	}
	return hosts, urls[0], nil
}

// cmdRun: am run [--conf FILE] [-D k=v]… [--dynamic-file NAME] [--workers N] -- <worker command…>
// It is the ApplicationMaster, in the AM container YARN started.
func cmdRun(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var c common
	c.register(fs, true)
	workers := fs.Int("workers", 0, "number of workers, at least 1 (default: from parallelism.default)")
	worker, set, err := workerPlan(fs, args, &c, e, workers)
	if err != nil {
		return err
	}
	planned := set.Groups
	for _, g := range planned {
		for _, w := range g.Plan.Warnings {
			e.log.WithField("group", g.Name).Warn(w)
		}
	}
	ae, err := submit.ReadAMEnv(e.getenv)
	if err != nil {
		return err
	}
	staged := ae.Resources
	// The overrides am submit staged reach the workers as that same file,
	// never on their command lines.
	dynamicFile, err := stagedDynamicFile(c.dynamicFile, staged)
	if err != nil {
		return err
	}
	if e.deps.amClients == nil {
		return fmt.Errorf("%w: the ApplicationMasterProtocol and ContainerManagementProtocol clients are not wired to am", errNotWired)
	}

	l, err := amweb.Listen(ctx, set.BindAddress, set.BindPort)
	if err != nil {
		return configError{err}
	}
	host := e.getenv("NM_HOST")
	if host == "" {
		host, _ = os.Hostname()
	}
	trackingURL := fmt.Sprintf("http://%s/", net.JoinHostPort(host, strconv.Itoa(l.Addr().(*net.TCPAddr).Port)))

	clients, err := e.deps.amClients(ctx, e.getenv, ae, set, e.log)
	if err != nil {
		l.Close()
		return clusterError{err}
	}
	if clients.Close != nil {
		defer clients.Close()
	}

	total := set.Workers()
	groups := workerGroups(set, worker, trackingURL, workerFiles{staged: staged, dynamicFile: dynamicFile, dynamic: c.dynamic.Values, tokens: clients.WorkerTokens})
	// Each worker gets a report key of its own, never the application's
	// secret, in whatever credentials it is started with.
	nm := amnm.WithContainerKeys(clients.NM, clients.ReportSecret)
	if clients.Tokens != nil {
		nm = amnm.WithTokens(nm, clients.Tokens)
	}
	appID := appIDFromContainer(e.getenv("CONTAINER_ID"))
	// The RM keeps the final diagnostics: with the worker lines in them, am
	// status still lists the workers once this AM is gone.
	rmc := &finishWithWorkers{RMClient: noFinalURL{clients.RM}}
	a, err := am.New(amConfig(set, groups, appID, host, trackingURL, clients, e), rmc, nm, clients.Logs)
	if err != nil {
		l.Close()
		return configError{err}
	}
	rmc.status = a.Status

	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		serveTracker(sctx, l, a, clients, appID, e.log)
	}()
	if clients.Renew != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients.Renew(sctx)
		}()
	}
	for _, g := range planned {
		e.log.WithFields(logrus.Fields{"group": g.Name, "workers": g.Plan.Workers, "spares": g.Plan.Spares, "profile": g.Plan.Profile.String()}).Info("worker group")
	}
	if set.NullWorker {
		e.log.WithField("key", conf.BenchNullWorker.Key).Warn("benchmark floor: workers start without the container-launcher and without files (no devices, no report)")
	}
	e.log.WithFields(logrus.Fields{"workers": total, "tracking_url": trackingURL}).Info("application master starting")
	res, err := a.Run(ctx)
	stop()
	wg.Wait()
	if err != nil {
		return clusterError{err}
	}
	removeStaging(ctx, ae.StagingDir, clients.Cleanup, e.log)
	e.log.WithFields(logrus.Fields{"status": res.Status, "am_peak_rss_kib": am.PeakRSSKiB()}).Info("application master done")
	fmt.Fprintf(e.stdout, "final status: %s\n%s\n", res.Status, res.Diagnostics)
	if res.Status != yarn.StatusSucceeded {
		return errAppFailed
	}
	return nil
}

// amConfig is the allocate loop's configuration: the groups, where this
// AM registers (host, trackingURL), the settings' heartbeats and fault
// bounds, the launcher's exit codes and the clients' RM retry bounds,
// state store and node lister.
func amConfig(set amplan.Settings, groups []amplan.Group, appID, host, trackingURL string, clients amClients, e *env) am.Config {
	return am.Config{
		AppID:            appID,
		Groups:           groups,
		Register:         yarn.RegisterRequest{Host: host, RPCPort: -1, TrackingURL: trackingURL},
		Heartbeat:        set.Heartbeat,
		RequestHeartbeat: set.RequestHeartbeat,
		BadNodeExits:     resources.BadNodeExitCodes(),
		BadJobExits:      resources.BadJobExitCodes(),
		DeviceExits:      resources.DeviceExitCodes(),
		BlacklistExpiry:  set.BlacklistExpiry,
		RequestTimeout:   set.RequestTimeout,
		RMMaxWait:        clients.RMMaxWait,
		RMRetryInterval:  clients.RMRetryInterval,
		Log:              e.log,
		SubmitTime:       submitTime(e.getenv("APP_SUBMIT_TIME_ENV")),
		PeakRSS:          am.PeakRSSKiB,
		Metrics:          ammetrics.New(appID, nil),
		Idle:             set.Idle,
		State:            clients.State,
		Nodes:            clients.Nodes,
	}
}

// workerFiles are what every worker container is started with besides
// its command: the staged files, the -D overrides (as the staged file, or
// given to am run by hand) and its credentials.
type workerFiles struct {
	staged      map[string]yarn.LocalResource
	dynamicFile string
	dynamic     []string
	tokens      []byte
}

// workerGroups builds each planned group's launch: its environment (the
// group's containerized.taskmanager.env.*, where to report and to read the
// worker count under trackingURL, its name), its command (the group's own
// or worker) and the files.
func workerGroups(set amplan.Settings, worker []string, trackingURL string, f workerFiles) []amplan.Group {
	base := strings.TrimSuffix(trackingURL, "/")
	confName := submit.ConfName(set.ConfPath)
	total := set.Workers()
	var groups []amplan.Group
	for _, g := range set.Groups {
		// A group's containerized.taskmanager.env.* are those its view sees.
		workerEnv := maps.Clone(g.Env)
		if workerEnv == nil {
			workerEnv = map[string]string{}
		}
		workerEnv[contract.EnvReportURL] = base + amweb.PathReport
		workerEnv[amweb.EnvWorkersURL] = base + amweb.PathWorkers
		workerEnv[amweb.EnvWorkers] = strconv.Itoa(total)
		cmd := worker
		if g.Command != nil {
			cmd = g.Command
		}
		if g.Name != "" {
			workerEnv[conf.EnvWorkerGroup] = g.Name
		}
		spec := amplan.WorkerSpec{Resources: f.staged, ConfName: confName, DynamicFile: f.dynamicFile, Dynamic: f.dynamic,
			Worker: cmd, Env: workerEnv, Tokens: f.tokens}
		launch := amplan.WorkerLaunch(spec)
		if set.NullWorker {
			launch = amplan.NullWorkerLaunch(spec)
		}
		groups = append(groups, amplan.Group{Name: g.Name, Plan: g.Plan, Owners: amplan.Owners(g.Specs), Launch: launch})
	}
	return groups
}

// stagedDynamicFile is the link name of --dynamic-file among the staged
// files ("" without it): the overrides am submit staged reach the workers
// as that same file, never on their command lines.
func stagedDynamicFile(flag string, staged map[string]yarn.LocalResource) (string, error) {
	if flag == "" {
		return "", nil
	}
	name := filepath.Base(flag)
	if _, ok := staged[name]; !ok {
		return "", configError{fmt.Errorf("--dynamic-file %s: %s is not among the staged files (%s), so the workers could not read it", flag, name, submit.EnvLocalResources)}
	}
	return name, nil
}

// serveTracker serves the tracking server on l until ctx ends: a's status,
// the launchers' reports and rendezvous (signed with the report secret),
// links to the workers' logs, behind the RM's web proxy when there is one.
func serveTracker(ctx context.Context, l net.Listener, a *am.AM, clients amClients, appID string, log logrus.FieldLogger) {
	opts := []amweb.TrackerOption{amweb.WithReportSecret(clients.ReportSecret)}
	if nl, ok := clients.Logs.(amnm.NMWebLogs); ok {
		opts = append(opts, amweb.WithNodeLogLinks(clients.NodeWeb, nl.User))
	}
	if m := a.Metrics(); m != nil {
		opts = append(opts, amweb.WithMetrics(m.Handler()))
	}
	if clients.ProxyURL != "" {
		opts = append(opts, amweb.WithWebProxy(&amweb.WebProxy{Hosts: clients.ProxyHosts, URL: clients.ProxyURL, App: appID}))
	}
	if err := amweb.Serve(ctx, l, amweb.NewTracker(a, log, opts...)); err != nil {
		log.WithError(err).Warn("tracking server stopped")
	}
}

// removeStaging removes the application's staging folder dir with cleanup
// (either may be empty: nothing to do), bounded, even after ctx ended.
func removeStaging(ctx context.Context, dir string, cleanup func(context.Context, string) error, log logrus.FieldLogger) {
	if dir != "" && cleanup != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if err := cleanup(cctx, dir); err != nil {
			log.WithError(err).WithField("dir", dir).Warn("could not remove the staging folder")
		}
		cancel()
	}
}

// noFinalURL is the AM's RM client unregistering with no final tracking
// URL: the tracking page dies with the AM, and Hadoop's contract for the
// final URL is a page that outlives it. With none the RM's web proxy sends
// the application's link (/proxy/<app>/) to the RM's own application page,
// which shows the final diagnostics (the worker lines, finishWithWorkers).
type noFinalURL struct{ am.RMClient }

func (n noFinalURL) Finish(ctx context.Context, req yarn.FinishRequest) error {
	req.TrackingURL = ""
	return n.RMClient.Finish(ctx, req)
}

// appIDFromContainer derives the application id from CONTAINER_ID
// (container_[e<epoch>_]<ts>_<app>_<attempt>_<n>); "" if it is not one.
func appIDFromContainer(id string) string {
	c, err := yarn.ParseContainerID(id)
	if err != nil {
		return ""
	}
	return yarn.ApplicationID(c.GetAppId())
}

// submitTime parses APP_SUBMIT_TIME_ENV (ms since the epoch, set by the RM
// in the AM container); zero if absent.
func submitTime(ms string) time.Time {
	v, err := strconv.ParseInt(strings.TrimSpace(ms), 10, 64)
	if err != nil || v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// workerPlan parses the flags and the worker command after --, as submit
// and run take them, loads the configuration and reads the AM's settings
// from it (amplan.Load: the worker groups planned, one unnamed group without
// xres.worker-groups; a group every launcher would refuse is refused,
// workerSpecs).
func workerPlan(fs *flag.FlagSet, args []string, c *common, e *env, workers *int) ([]string, amplan.Settings, error) {
	pos, worker, err := parse(fs, args)
	if err != nil {
		return nil, amplan.Settings{}, err
	}
	if len(pos) > 0 {
		return nil, amplan.Settings{}, fmt.Errorf("%w: unexpected argument %q (the worker command goes after --)", errUsage, pos[0])
	}
	if len(worker) == 0 {
		return nil, amplan.Settings{}, fmt.Errorf("%w: no worker command (am %s [flags] -- <worker command…>)", errUsage, fs.Name())
	}
	if err := checkWorkers(fs, *workers); err != nil {
		return nil, amplan.Settings{}, err
	}
	if err := c.apply(e); err != nil {
		return nil, amplan.Settings{}, err
	}
	cfg, err := c.load(e)
	if err != nil {
		return nil, amplan.Settings{}, err
	}
	set, err := amplan.Load(cfg, *workers, workerSpecs(resources.ParseOptions{Side: resources.SideYarn, Log: e.log}, e.getenv))
	if err != nil {
		return nil, amplan.Settings{}, configError{err}
	}
	return worker, set, nil
}

// checkWorkers refuses a --workers given as 0 or less: leaving the flag out
// is how the configuration picks the number.
func checkWorkers(fs *flag.FlagSet, n int) error {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "workers" })
	if set && n < 1 {
		return fmt.Errorf("%w: --workers %d: must be at least 1 (leave it out to take the number from parallelism.default)", errUsage, n)
	}
	return nil
}
