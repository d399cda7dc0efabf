package yarn

// ResourceManager addresses from the Hadoop configuration, with RM HA.
//
// Without HA each service has one address, yarn.resourcemanager.<service>
// (whose default derives from yarn.resourcemanager.hostname). With
// yarn.resourcemanager.ha.enabled=true the list is ordered by
// yarn.resourcemanager.ha.rm-ids, and each id's address is
//
//	yarn.resourcemanager.<service>.<rm-id>        when set, else
//	yarn.resourcemanager.hostname.<rm-id>:<default port of the service>
//
// as Hadoop's HAUtil resolves them. Clients try the addresses in order and
// fail over to the next on a connection error or a standby answer.

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/conf"
)

// RMService names one ResourceManager endpoint.
type RMService int

// The ResourceManager endpoints a client or AM talks to.
const (
	RMClient          RMService = iota // ApplicationClientProtocol, yarn.resourcemanager.address, :8032
	RMScheduler                        // ApplicationMasterProtocol, yarn.resourcemanager.scheduler.address, :8030
	RMResourceTracker                  // NodeManagers, yarn.resourcemanager.resource-tracker.address, :8031
	RMAdmin                            // yarn.resourcemanager.admin.address, :8033
	RMWebapp                           // REST: webapp.address (:8088), or webapp.https.address (:8090) under HTTPS_ONLY
)

// ErrRMConfig marks a ResourceManager address that cannot be worked out
// from the configuration.
var ErrRMConfig = errors.New("invalid resourcemanager configuration")

type rmServiceInfo struct {
	key  string
	port int
	name string
}

var rmServices = map[RMService]rmServiceInfo{
	RMClient:          {conf.HadoopRMAddress, 8032, "client"},
	RMScheduler:       {conf.HadoopRMSchedulerAddress, 8030, "scheduler"},
	RMResourceTracker: {conf.HadoopRMResourceTrackerAddress, 8031, "resource-tracker"},
	RMAdmin:           {conf.HadoopRMAdminAddress, 8033, "admin"},
	RMWebapp:          {conf.HadoopRMWebappAddress, 8088, "webapp"},
}

var rmWebappHTTPS = rmServiceInfo{conf.HadoopRMWebappHTTPSAddress, 8090, "webapp"}

// String returns the service's short name ("client", "scheduler", …).
func (s RMService) String() string {
	if info, ok := rmServices[s]; ok {
		return info.name
	}
	return "RMService(" + strconv.Itoa(int(s)) + ")"
}

// WebappHTTPS reports whether the RM web endpoints are HTTPS
// (yarn.http.policy=HTTPS_ONLY).
func WebappHTTPS(hc *conf.HadoopConfig) bool {
	return strings.EqualFold(strings.TrimSpace(hc.GetDefault(conf.HadoopYarnHTTPPolicy, "HTTP_ONLY")), "HTTPS_ONLY")
}

// RMHAEnabled reports yarn.resourcemanager.ha.enabled.
func RMHAEnabled(hc *conf.HadoopConfig) (bool, error) {
	on, err := hc.GetBool(conf.HadoopRMHAEnabled, false)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrRMConfig, err)
	}
	return on, nil
}

// RMIDs returns yarn.resourcemanager.ha.rm-ids when HA is enabled, nil
// otherwise. HA enabled with no ids is an error naming the key.
func RMIDs(hc *conf.HadoopConfig) ([]string, error) {
	on, err := RMHAEnabled(hc)
	if err != nil || !on {
		return nil, err
	}
	ids := hc.GetStrings(conf.HadoopRMHAIDs)
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: yarn.resourcemanager.ha.enabled is true but yarn.resourcemanager.ha.rm-ids is empty", ErrRMConfig)
	}
	return ids, nil
}

// RMAddresses returns the host:port addresses of one ResourceManager
// service: one entry without HA, one per rm-id (in rm-ids order) with HA.
// Every entry is checked to be host:port; errors name the key and where it
// was set.
func RMAddresses(hc *conf.HadoopConfig, which RMService) ([]string, error) {
	info, ok := rmServices[which]
	if !ok {
		return nil, fmt.Errorf("%w: unknown service %v", ErrRMConfig, which)
	}
	if which == RMWebapp && WebappHTTPS(hc) {
		info = rmWebappHTTPS
	}
	ids, err := RMIDs(hc)
	if err != nil {
		return nil, err
	}
	if ids == nil {
		addr, err := rmAddress(hc, info.key, "", info.port)
		if err != nil {
			return nil, err
		}
		return []string{addr}, nil
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		addr, err := rmAddress(hc, info.key+"."+id, conf.HadoopRMHostname+"."+id, info.port)
		if err != nil {
			return nil, fmt.Errorf("rm-id %s: %w", id, err)
		}
		out = append(out, addr)
	}
	return out, nil
}

// RMWebappURLs returns the RM REST base URLs ("http://host:port" or
// "https://host:port" under HTTPS_ONLY), in failover order.
func RMWebappURLs(hc *conf.HadoopConfig) ([]string, error) {
	addrs, err := RMAddresses(hc, RMWebapp)
	if err != nil {
		return nil, err
	}
	scheme := "http://"
	if WebappHTTPS(hc) {
		scheme = "https://"
	}
	for i, a := range addrs {
		addrs[i] = scheme + a
	}
	return addrs, nil
}

// KeyWebProxyAddress is where a standalone web proxy runs; unset, the
// proxy runs in each ResourceManager (at its webapp address).
const KeyWebProxyAddress = conf.HadoopWebProxyAddress

// WebProxyURLs returns the base URLs of the RM's web proxy, through which
// users reach an application's tracking page ("http://host:port", or
// https under HTTPS_ONLY): yarn.web-proxy.address where it is set, else
// the RM webapp URLs (RMWebappURLs, one per rm-id under HA), as Hadoop's
// AM filter finds them.
func WebProxyURLs(hc *conf.HadoopConfig) ([]string, error) {
	v, ok, err := hc.Lookup(KeyWebProxyAddress)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRMConfig, err)
	}
	if !ok || strings.TrimSpace(v) == "" {
		return RMWebappURLs(hc)
	}
	v = strings.TrimSpace(v)
	if host, _, err := net.SplitHostPort(v); err != nil || host == "" {
		src, _ := hc.Source(KeyWebProxyAddress)
		return nil, fmt.Errorf("%w: %s (%s): %q is not host:port", ErrRMConfig, KeyWebProxyAddress, src, v)
	}
	scheme := "http://"
	if WebappHTTPS(hc) {
		scheme = "https://"
	}
	return []string{scheme + v}, nil
}

// rmAddress reads key; when it is unset and hostKey is set, it builds
// hostKey's value with the default port.
func rmAddress(hc *conf.HadoopConfig, key, hostKey string, port int) (string, error) {
	v, ok, err := hc.Lookup(key)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrRMConfig, err)
	}
	src, _ := hc.Source(key)
	if !ok && hostKey != "" {
		host, hok, err := hc.Lookup(hostKey)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrRMConfig, err)
		}
		if !hok || strings.TrimSpace(host) == "" {
			return "", fmt.Errorf("%w: neither %s nor %s is set", ErrRMConfig, key, hostKey)
		}
		v, key = net.JoinHostPort(strings.TrimSpace(host), strconv.Itoa(port)), hostKey
		src, _ = hc.Source(hostKey)
	}
	if !ok && hostKey == "" {
		return "", fmt.Errorf("%w: %s is not set", ErrRMConfig, key)
	}
	v = strings.TrimSpace(v)
	host, p, err := net.SplitHostPort(v)
	if err != nil || host == "" {
		return "", fmt.Errorf("%w: %s (%s): %q is not host:port", ErrRMConfig, key, src, v)
	}
	if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("%w: %s (%s): bad port in %q", ErrRMConfig, key, src, v)
	}
	return v, nil
}

// How clients wait for an unreachable ResourceManager (Hadoop's RMProxy).
const (
	KeyRMConnectMaxWait       = conf.HadoopRMConnectMaxWait
	KeyRMConnectRetryInterval = conf.HadoopRMConnectRetryInterval
)

// Hadoop's defaults of those keys, and what RMConnectPolicy returns for a max-wait of -1
// (retry without end).
const (
	DefaultRMConnectMaxWait       = 15 * time.Minute
	DefaultRMConnectRetryInterval = 30 * time.Second
	RMWaitForever                 = time.Duration(math.MaxInt64)
)

// RMConnectPolicy reads how long a client keeps retrying an unreachable ResourceManager
// (yarn.resourcemanager.connect.max-wait.ms; -1: for ever, RMWaitForever) and how often
// (yarn.resourcemanager.connect.retry-interval.ms), Hadoop's defaults 15 min and 30 s. As in
// Hadoop, a retry interval above the max wait is an error; errors name the key and its source.
func RMConnectPolicy(hc *conf.HadoopConfig) (maxWait, retry time.Duration, err error) {
	wait, err := hc.GetInt(KeyRMConnectMaxWait, DefaultRMConnectMaxWait.Milliseconds())
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", ErrRMConfig, err)
	}
	every, err := hc.GetInt(KeyRMConnectRetryInterval, DefaultRMConnectRetryInterval.Milliseconds())
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", ErrRMConfig, err)
	}
	src := func(k string) string {
		s, _ := hc.Source(k)
		return s
	}
	switch {
	case every <= 0:
		return 0, 0, fmt.Errorf("%w: %s=%d (%s): want a positive number of milliseconds", ErrRMConfig, KeyRMConnectRetryInterval, every, src(KeyRMConnectRetryInterval))
	case wait == -1:
		return RMWaitForever, time.Duration(every) * time.Millisecond, nil
	case wait < 0:
		return 0, 0, fmt.Errorf("%w: %s=%d (%s): want milliseconds, or -1 to wait for ever", ErrRMConfig, KeyRMConnectMaxWait, wait, src(KeyRMConnectMaxWait))
	case every > wait:
		return 0, 0, fmt.Errorf("%w: %s=%d (%s) is longer than %s=%d (%s)", ErrRMConfig, KeyRMConnectRetryInterval, every,
			src(KeyRMConnectRetryInterval), KeyRMConnectMaxWait, wait, src(KeyRMConnectMaxWait))
	}
	return time.Duration(wait) * time.Millisecond, time.Duration(every) * time.Millisecond, nil
}
