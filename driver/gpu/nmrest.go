package gpu

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
)

// YARN resource names whose NodeManager plugins assign GPUs.
const (
	// YarnGPU is YARN's built-in GPU plugin (yarn.nodemanager.resource-plugins:
	// yarn.io/gpu); under Docker it sets NVIDIA_VISIBLE_DEVICES to GPU indices.
	YarnGPU = "yarn.io/gpu"
	// YarnNvidiaGPU is the pluggable device framework's NVIDIA plugin
	// (NvidiaGPUPluginForRuntimeV2); under Docker it sets
	// NVIDIA_VISIBLE_DEVICES to minor numbers.
	YarnNvidiaGPU = "nvidia.com/gpu"
)

// The container's environment, as YARN's NodeManager sets it
// (ApplicationConstants.Environment).
const (
	EnvContainerID = "CONTAINER_ID"
	EnvNMHost      = "NM_HOST"
	EnvNMHTTPPort  = "NM_HTTP_PORT"
)

// nmResourcePath is the NodeManager's REST resource of a resource plugin
// (NMWebServices#getNMResourceInfo); the name is path-escaped
// ("yarn.io%2Fgpu").
const nmResourcePath = "/ws/v1/node/resources/"

// maxNMAnswer bounds what is read of an answer.
const maxNMAnswer = 4 << 20

// NMGPU is one GPU the NodeManager's plugin knows: its index and minor
// number and, when assigned, the container holding it.
type NMGPU struct {
	Index       int    `json:"index"` // -1 when the answer has none
	Minor       int    `json:"minor"`
	BusID       string `json:"bus_id,omitempty"` // the device framework's busID
	ContainerID string `json:"container_id,omitempty"`
}

// NMResourceInfo is what the NodeManager's REST says of a resource.
type NMResourceInfo struct {
	// Plugin: the NodeManager has a plugin for the resource that assigns
	// devices (false: it only counts them, or does not know the name).
	Plugin   bool
	Total    []NMGPU
	Assigned []NMGPU
}

// For returns the GPUs assigned to container, in (index, minor) order as
// YARN hands them out.
func (i NMResourceInfo) For(container string) []NMGPU {
	var out []NMGPU
	for _, g := range i.Assigned {
		if g.ContainerID == container {
			out = append(out, g)
		}
	}
	return out
}

// ParseNMResourceInfo reads the NodeManager's answer to
// GET /ws/v1/node/resources/<name> in every shape Hadoop's JSON providers
// give it: wrapped in its root element ({"nmGpuResourceInfo": {...}}) or
// not; lists as arrays, as a single object (a one-element list under
// Jettison's mapped notation) or absent; numbers as numbers or strings.
// yarn.io/gpu answers NMGpuResourceInfo (totalGpuDevices,
// assignedGpuDevices: {index, minorNumber, containerId}); nvidia.com/gpu
// answers NMDeviceResourceInfo (totalDevices, assignedDevices:
// {containerId, device: {id, minorNumber, …}}). An answer with none of
// these (an empty NMResourceInfo: no plugin for the name) has Plugin false.
func ParseNMResourceInfo(b []byte) (NMResourceInfo, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var top any
	if err := dec.Decode(&top); err != nil {
		return NMResourceInfo{}, fmt.Errorf("not JSON: %w", err)
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return NMResourceInfo{}, fmt.Errorf("not a JSON object")
	}
	obj = unwrapRoot(obj)
	var info NMResourceInfo
	for _, k := range []string{"gpuDeviceInformation", "totalGpuDevices", "assignedGpuDevices", "totalDevices", "assignedDevices"} {
		if _, ok := obj[k]; ok {
			info.Plugin = true
		}
	}
	var err error
	if info.Total, err = nmList(obj, "totalGpuDevices", false); err != nil {
		return NMResourceInfo{}, err
	}
	if info.Assigned, err = nmList(obj, "assignedGpuDevices", true); err != nil {
		return NMResourceInfo{}, err
	}
	tot, err := nmList(obj, "totalDevices", false)
	if err != nil {
		return NMResourceInfo{}, err
	}
	info.Total = append(info.Total, tot...)
	as, err := nmList(obj, "assignedDevices", true)
	if err != nil {
		return NMResourceInfo{}, err
	}
	info.Assigned = append(info.Assigned, as...)
	return info, nil
}

// unwrapRoot strips the root element a JAXB JSON provider wraps the answer
// in: an object of one key whose value is an object, when none of the
// fields is at the top.
func unwrapRoot(obj map[string]any) map[string]any {
	if len(obj) != 1 {
		return obj
	}
	for k, v := range obj {
		if strings.HasPrefix(k, "assigned") || strings.HasPrefix(k, "total") || k == "gpuDeviceInformation" {
			return obj
		}
		if inner, ok := v.(map[string]any); ok {
			return inner
		}
		return map[string]any{}
	}
	return obj
}

// nmList reads the list under key: an array, one object, or nothing.
func nmList(obj map[string]any, key string, assigned bool) ([]NMGPU, error) {
	var items []any
	switch v := obj[key].(type) {
	case nil, string: // absent, null, or Jettison's empty ""
		return nil, nil
	case []any:
		items = v
	case map[string]any:
		items = []any{v}
	default:
		return nil, fmt.Errorf("%s: not a list", key)
	}
	out := make([]NMGPU, 0, len(items))
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s[%d]: not an object", key, i)
		}
		dev := m
		if d, ok := m["device"].(map[string]any); ok { // AssignedDevice wraps a Device
			dev = d
		}
		g := NMGPU{Index: -1}
		var err error
		if _, ok := dev["minorNumber"]; !ok {
			return nil, fmt.Errorf("%s[%d]: no minorNumber", key, i)
		}
		if g.Minor, err = nmInt(dev["minorNumber"]); err != nil {
			return nil, fmt.Errorf("%s[%d].minorNumber: %w", key, i, err)
		}
		for _, ik := range []string{"index", "id"} {
			if v, ok := dev[ik]; ok {
				if g.Index, err = nmInt(v); err != nil {
					return nil, fmt.Errorf("%s[%d].%s: %w", key, i, ik, err)
				}
				break
			}
		}
		if b, ok := dev["busID"].(string); ok {
			g.BusID = strings.TrimSpace(b)
		}
		if assigned {
			c, _ := m["containerId"].(string)
			if c = strings.TrimSpace(c); c == "" {
				return nil, fmt.Errorf("%s[%d]: no containerId", key, i)
			}
			g.ContainerID = c
		}
		out = append(out, g)
	}
	return out, nil
}

func nmInt(v any) (int, error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	default:
		return 0, fmt.Errorf("not a number: %v", v)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a number: %q", clip(s, 40))
	}
	return n, nil
}

// nmClient asks a NodeManager's REST: one HTTP/1.1 GET per connection
// (Connection: close), written and read here (readNMResponse) rather than
// with net/http, whose client, HTTP/2 and package initialisation every
// launch would pay for one GET (BenchmarkLauncherOverhead: about 0.1 ms of
// each start). Where the NodeManager speaks HTTPS, the NodeManager REST
// helper (NMRESTHelperName) makes the GET: crypto/tls and x509 cost every
// start another 0.06-0.08 ms to initialise, and a cluster on HTTPS is
// most often the Kerberized one, whose SPNEGO goes through that helper
// anyway.
type nmClient struct {
	host    string
	port    string
	user    string // user.name for Hadoop's simple HTTP authentication
	https   bool   // yarn.http.policy HTTPS_ONLY
	caFile  string // PEM bundle trusted beside the system's
	timeout time.Duration
	getenv  func(string) string
}

// limit bounds one request: the client's timeout, 10 seconds where unset.
func (c *nmClient) limit() time.Duration {
	if c.timeout <= 0 {
		return 10 * time.Second
	}
	return c.timeout
}

// errNMNotHTTP: the port answered, but not HTTP (a TLS port asked in
// plain HTTP, or a plain port asked over TLS).
var errNMNotHTTP = errors.New("not an HTTP answer")

// errNMNegotiate: the NodeManager answered 401 asking for SPNEGO.
var errNMNegotiate = errors.New("the NodeManager asks for SPNEGO")

// nmAnswer is the outcome of one GET.
type nmAnswer struct {
	url    string
	status int
	body   []byte
}

// HTTP status codes the launcher tells apart.
const (
	statusOK           = 200
	statusBadRequest   = 400
	statusUnauthorized = 401
	statusNotFound     = 404
)

// get asks for resource's info: plain HTTP unless yarn.http.policy says
// HTTPS_ONLY, and HTTPS again where the port turns out to speak TLS.
func (c *nmClient) get(ctx context.Context, resource string) (nmAnswer, error) {
	return c.finish(ctx, resource, c.send(ctx, resource))
}

// send starts get: the plain HTTP request is written at once (nil under
// HTTPS_ONLY), so that the NodeManager answers while the launcher lists
// the host's GPUs; finish reads the answer.
func (c *nmClient) send(ctx context.Context, resource string) *plainCall {
	if c.https {
		return nil
	}
	if p := c.takePrefetched(ctx, resource); p != nil { // sent as the launcher started
		return p
	}
	return c.sendOn(ctx, resource, "")
}

// finish completes what send started (get): a NodeManager asking for
// SPNEGO is asked again with the token the helper makes; one on HTTPS is
// asked through the helper.
func (c *nmClient) finish(ctx context.Context, resource string, sent *plainCall) (nmAnswer, error) {
	schemes := []string{"http", "https"}
	if c.https {
		schemes = []string{"https"}
	}
	var lastErr error
	for _, scheme := range schemes {
		var a nmAnswer
		var err error
		if scheme == "https" {
			a, err = c.getHTTPS(ctx, resource)
		} else {
			call := sent
			if call == nil {
				call = c.sendOn(ctx, resource, "")
			}
			a, err = call.receive()
			if errors.Is(err, errNMNegotiate) {
				var auth string
				if auth, err = c.spnego(); err != nil {
					return a, fmt.Errorf("GET %s: the NodeManager requires SPNEGO (Kerberos) authentication: %w", a.url, err)
				}
				if a, err = c.sendOn(ctx, resource, auth).receive(); errors.Is(err, errNMNegotiate) {
					err = fmt.Errorf("GET %s (SPNEGO): refused (HTTP 401)", a.url)
				}
			}
		}
		if err == nil {
			return a, nil
		}
		lastErr = err
		if !errors.Is(err, errNMNotHTTP) {
			return a, err
		}
	}
	return nmAnswer{}, lastErr
}

func (c *nmClient) url(scheme, resource string) string {
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(c.host, c.port), RawPath: nmResourcePath + url.PathEscape(resource),
		Path: nmResourcePath + resource}
	if c.user != "" {
		u.RawQuery = url.Values{"user.name": {c.user}}.Encode()
	}
	return u.String()
}

// checkCAFile reads caFile, which the helper trusts beside the system's
// CAs, and says what is wrong with it naming the param: the helper's own
// message would name its flag.
func (c *nmClient) checkCAFile() error {
	if c.caFile == "" {
		return nil
	}
	b, err := os.ReadFile(c.caFile)
	if err != nil {
		return fmt.Errorf("%s: %w", ParamYarnCAFile, err)
	}
	for rest := b; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			return fmt.Errorf("%s = %s: no PEM certificate in it", ParamYarnCAFile, c.caFile)
		}
		if blk.Type == "CERTIFICATE" {
			return nil
		}
	}
}

// errNMUnknownCA: the NodeManager's certificate is signed by an authority
// neither the system nor the CA param trusts.
var errNMUnknownCA = errors.New("the NodeManager's certificate is signed by an unknown authority")

// Exit codes of the helper (nmhelper.Exit*).
const (
	helperNoCredentials = 3
	helperNotTLS        = 4
	helperUnknownCA     = 5
)

// getHTTPS asks for resource's info over HTTPS, through the helper.
func (c *nmClient) getHTTPS(ctx context.Context, resource string) (nmAnswer, error) {
	a := nmAnswer{url: c.url("https", resource)}
	if err := c.checkCAFile(); err != nil {
		return a, err
	}
	helper, err := findHelper(NMRESTHelperName, ErrNMRESTHelperMissing, c.getenv)
	if err != nil {
		return a, fmt.Errorf("GET %s: the NodeManager speaks HTTPS, which the launcher asks through its helper: %w", a.url, err)
	}
	timeout := c.limit()
	args := []string{"get", "--timeout", timeout.String()}
	if c.caFile != "" {
		args = append(args, "--ca-file", c.caFile)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, helper, append(args, a.url)...)
	cmd.Env = helperEnv(c.getenv, "KRB5CCNAME", "KRB5_CONFIG")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limitedBuffer{b: &stdout, n: maxNMAnswer + 64}, &limitedBuffer{b: &stderr, n: 4096}
	runErr := cmd.Run()
	said := clip(strings.TrimSpace(string(bytes.TrimPrefix(stderr.Bytes(), []byte(NMRESTHelperName+": ")))), 300)
	if runErr != nil {
		var ee *exec.ExitError
		code := -1
		if errors.As(runErr, &ee) {
			code = ee.ExitCode()
		}
		switch {
		case ctx.Err() != nil:
			return a, fmt.Errorf("GET %s: no answer within %s", a.url, timeout)
		case code == helperNotTLS:
			return a, fmt.Errorf("GET %s: %w: %s", a.url, errNMNotHTTP, said)
		case code == helperUnknownCA:
			return a, fmt.Errorf("GET %s: %w: %s", a.url, errNMUnknownCA, said)
		case code == helperNoCredentials:
			return a, fmt.Errorf("GET %s: the NodeManager requires SPNEGO (Kerberos) authentication: %w", a.url, noKerberos(strings.TrimPrefix(said, "the NodeManager requires SPNEGO (Kerberos) authentication: ")))
		}
		return a, fmt.Errorf("GET %s (helper %s): %v: %s", a.url, helper, runErr, said)
	}
	line, body, _ := bytes.Cut(stdout.Bytes(), []byte("\n"))
	code, ok := strings.CutPrefix(string(line), "HTTP ")
	status, err := strconv.Atoi(code)
	if !ok || err != nil || status < 100 || status > 999 {
		return a, fmt.Errorf("GET %s (helper %s): not an answer: %q", a.url, helper, clip(string(line), 40))
	}
	if len(body) > maxNMAnswer {
		return a, fmt.Errorf("GET %s: the answer is longer than %d bytes", a.url, maxNMAnswer)
	}
	a.status, a.body = status, body
	return a, nil
}

// limitedBuffer keeps the first n bytes written to it.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// errNoKerberos: the container holds no Kerberos ticket cache.
var errNoKerberos = errors.New("this container has no Kerberos credentials")

// noKerberos is errNoKerberos with what the container lacks and what to
// do about it.
func noKerberos(detail string) error {
	return fmt.Errorf("%w: %s; YARN hands containers delegation tokens, not Kerberos tickets: "+
		"give the NodeManager's REST to the container without SPNEGO, or set %s to off where the cluster only counts GPUs",
		errNoKerberos, clip(strings.TrimPrefix(detail, "no Kerberos credentials: "), 300), ParamYarnAssignment)
}

// NMRESTHelperName is the NodeManager REST helper
// (driver/gpu/nmhelper, cmd/container-launcher/xres-nmrest): HTTPS
// (crypto/tls, x509) and SPNEGO (gokrb5, encoding/gob) are linked there,
// not here, so that no launch initialises them; it runs only when a
// NodeManager speaks HTTPS or asks for SPNEGO.
const NMRESTHelperName = "xres-nmrest"

// ErrNMRESTHelperMissing: a NodeManager speaks HTTPS or asked for SPNEGO
// and the launcher found no helper (NMRESTHelperName) to ask it with.
var ErrNMRESTHelperMissing = errors.New("NodeManager REST helper missing")

// spnego authenticates with the container's Kerberos ticket cache
// (KRB5CCNAME, else /tmp/krb5cc_<uid>) and krb5.conf (KRB5_CONFIG, else
// /etc/krb5.conf), through the SPNEGO helper. YARN gives containers
// delegation tokens, not tickets: a container without a cache says so
// (checked here, before the helper is looked for).
func (c *nmClient) spnego() (string, error) {
	cc := strings.TrimPrefix(c.getenv("KRB5CCNAME"), "FILE:")
	if cc == "" {
		cc = filepath.Join(os.TempDir(), "krb5cc_"+strconv.Itoa(os.Getuid()))
	}
	if _, err := os.Stat(cc); err != nil {
		return "", noKerberos(fmt.Sprintf("no ticket cache (KRB5CCNAME unset or %s absent)", cc))
	}
	helper, err := findHelper(NMRESTHelperName, ErrNMRESTHelperMissing, c.getenv)
	if err != nil {
		return "", err
	}
	timeout := c.limit()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, helper, "token", "HTTP/"+c.host)
	cmd.Env = helperEnv(c.getenv, "KRB5CCNAME", "KRB5_CONFIG")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	said := strings.TrimSpace(string(bytes.TrimPrefix(stderr.Bytes(), []byte(NMRESTHelperName+": "))))
	if runErr != nil {
		var ee *exec.ExitError
		if errors.As(runErr, &ee) && ee.ExitCode() == helperNoCredentials {
			return "", noKerberos(said)
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("SPNEGO helper %s: no token within %s", helper, timeout)
		}
		return "", fmt.Errorf("SPNEGO helper %s: %v: %s", helper, runErr, clip(said, 300))
	}
	header := strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(header, "Negotiate ") || strings.ContainsAny(header, "\r\n") {
		return "", fmt.Errorf("SPNEGO helper %s: printed no Negotiate token", helper)
	}
	return header, nil
}

// findHelper looks for the helper program name beside the launcher as it was called
// (YARN links localized files into the container's folder and starts
// ./container-launcher there), beside the launcher's file, then on PATH;
// not found, its error wraps missing.
func findHelper(name string, missing error, getenv func(string) string) (string, error) {
	p, beside, err := driver.FindHelper(name, getenv)
	if err != nil {
		return "", fmt.Errorf("%w: %s is not beside the launcher (%s) nor on PATH: install it there (make build writes both)",
			missing, name, strings.Join(beside, ", "))
	}
	return p, nil
}

// helperEnv is the launcher's environment with keys as getenv reads them
// (the container's, which tests replace).
func helperEnv(getenv func(string) string, keys ...string) []string {
	env := os.Environ()
	for _, k := range keys {
		env = append(env, k+"="+getenv(k))
	}
	return env
}

// siteConf is what the node's yarn-site.xml ($HADOOP_CONF_DIR) says, where
// the container can read it. The file is read at once and parsed only
// when a question needs it (parse): a cluster's yarn-site.xml may hold
// hundreds of properties (50 kB: 1.4 ms of encoding/xml), and a launch
// asks only yarn.http.policy, which most files that do not name it need
// not be parsed for.
type siteConf struct {
	read    bool
	path    string
	props   map[string]string
	readErr error

	raw    []byte
	parsed bool
}

func readSiteConf(getenv func(string) string) *siteConf {
	dir := getenv("HADOOP_CONF_DIR")
	if dir == "" {
		return &siteConf{parsed: true}
	}
	p := filepath.Join(dir, "yarn-site.xml")
	b, err := os.ReadFile(p)
	if err != nil {
		return &siteConf{path: p, readErr: err, parsed: true}
	}
	return &siteConf{path: p, raw: b}
}

// parse reads the properties, once.
func (s *siteConf) parse() {
	if s.parsed {
		return
	}
	s.parsed = true
	var doc struct {
		Props []struct {
			Name  string `xml:"name"`
			Value string `xml:"value"`
		} `xml:"property"`
	}
	if err := xml.Unmarshal(s.raw, &doc); err != nil {
		s.readErr = err
		return
	}
	props := make(map[string]string, len(doc.Props))
	for _, pr := range doc.Props {
		props[strings.TrimSpace(pr.Name)] = strings.TrimSpace(pr.Value)
	}
	s.read, s.props = true, props
}

// mayName: the file may define key. false only where its text holds
// neither key nor what could spell it in pieces (a character reference
// &#…;, a CDATA section): a property of that name is not in it then,
// parsed or not. (A name split by a comment is not looked for.)
func (s *siteConf) mayName(key string) bool {
	return s.parsed || bytes.Contains(s.raw, []byte(key)) || bytes.Contains(s.raw, []byte("&#")) || bytes.Contains(s.raw, []byte("<![CDATA["))
}

// httpsOnly: yarn.http.policy is HTTPS_ONLY.
func (s *siteConf) httpsOnly() bool {
	const key = conf.HadoopYarnHTTPPolicy
	if !s.mayName(key) {
		return false
	}
	s.parse()
	return strings.EqualFold(s.props[key], "HTTPS_ONLY")
}

// pluginConfigured says whether this yarn-site.xml enables a NodeManager
// plugin that assigns resource: yarn.nodemanager.resource-plugins lists it
// (yarn.io/gpu), or the pluggable device framework is on with a device
// plugin configured (nvidia.com/gpu). known is false where the file could
// not be read.
func (s *siteConf) pluginConfigured(resource string) (on, known bool) {
	s.parse()
	if !s.read {
		return false, false
	}
	for _, r := range strings.Split(s.props[conf.HadoopNMResourcePlugins], ",") {
		if strings.TrimSpace(r) == resource {
			return true, true
		}
	}
	if strings.EqualFold(s.props[conf.HadoopNMPluggableDeviceFramework], "true") &&
		s.props[conf.HadoopNMPluggableDeviceClasses] != "" && resource != YarnGPU {
		return true, true
	}
	return false, true
}

// plainCall is one GET over a fresh connection (Connection: close), sent
// (sendOn) and not yet read (receive).
type plainCall struct {
	a      nmAnswer
	err    error // of the sending: receive returns it
	ctx    context.Context
	conn   io.ReadWriteCloser
	cancel func()
}

// sendOn connects in plain HTTP and writes the request, with auth
// as its Authorization header ("" for none); errors wait for receive.
func (c *nmClient) sendOn(ctx context.Context, resource, auth string) *plainCall {
	p := &plainCall{a: nmAnswer{url: c.url("http", resource)}}
	timeout := c.limit()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	p.ctx, p.cancel = ctx, cancel
	addr := net.JoinHostPort(c.host, c.port)
	conn, err := dialNM(ctx, c.host, c.port)
	if err != nil {
		p.err = fmt.Errorf("GET %s: %w", p.a.url, err)
		return p
	}
	p.conn, p.cancel = conn, func() { _ = conn.Close(); cancel() }
	u, _ := url.Parse(p.a.url)
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + addr + "\r\nAccept: application/json\r\nUser-Agent: xres-container-launcher\r\n"
	if auth != "" {
		req += "Authorization: " + auth + "\r\n"
	}
	req += "Connection: close\r\n\r\n"
	if _, err := io.WriteString(p.conn, req); err != nil {
		p.err = fmt.Errorf("GET %s: %w", p.a.url, err)
	}
	return p
}

// receive reads the answer of the request sendOn sent, and closes the
// connection.
func (p *plainCall) receive() (nmAnswer, error) {
	defer p.cancel()
	a := p.a
	if p.err != nil {
		return a, p.err
	}
	resp, err := readNMResponse(bufio.NewReader(p.conn), maxNMAnswer)
	if err != nil {
		if p.ctx.Err() != nil {
			return a, fmt.Errorf("GET %s: %w", a.url, p.ctx.Err())
		}
		if errors.Is(err, errNMNotHTTP) {
			return a, fmt.Errorf("GET %s: %w", a.url, err)
		}
		return a, fmt.Errorf("GET %s: read the answer: %w", a.url, err)
	}
	if resp.status == statusUnauthorized && resp.negotiate {
		return a, errNMNegotiate
	}
	a.status, a.body = resp.status, resp.body
	if resp.status == statusBadRequest && bytes.Contains(bytes.ToUpper(a.body), []byte("HTTPS")) {
		// A TLS port asked in plain HTTP may answer so (Go's, Jetty's
		// "plain HTTP request was sent to HTTPS port").
		return a, fmt.Errorf("GET %s: %w: %s", a.url, errNMNotHTTP, clip(strings.TrimSpace(string(a.body)), 200))
	}
	return a, nil
}

// nmResponse is what readNMResponse keeps of an answer.
type nmResponse struct {
	status    int
	negotiate bool // a WWW-Authenticate: Negotiate challenge
	body      []byte
}

// errNMBody: the answer's framing is broken (a bad chunk, a body longer
// than the limit, a header line too long).
var errNMBody = errors.New("bad HTTP answer")

// readNMResponse reads one HTTP/1.x answer to a GET sent with
// Connection: close: the status line, the header fields (only
// WWW-Authenticate, Content-Length and Transfer-Encoding are used) and the
// body, framed by chunks, a length or the connection's end, at most limit
// bytes. What does not begin like HTTP is errNMNotHTTP.
func readNMResponse(r *bufio.Reader, limit int64) (nmResponse, error) {
	var resp nmResponse
	line, err := readNMLine(r)
	if err != nil {
		return resp, fmt.Errorf("%w: %v", errNMNotHTTP, err)
	}
	proto, rest, _ := strings.Cut(line, " ")
	code, _, _ := strings.Cut(rest, " ")
	if !strings.HasPrefix(proto, "HTTP/1.") || len(code) != 3 {
		return resp, fmt.Errorf("%w: %q", errNMNotHTTP, clip(line, 40))
	}
	if resp.status, err = strconv.Atoi(code); err != nil || resp.status < 100 {
		return resp, fmt.Errorf("%w: %q", errNMNotHTTP, clip(line, 40))
	}
	length, chunked := int64(-1), false
	for {
		line, err := readNMLine(r)
		if err != nil {
			return resp, err
		}
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return resp, fmt.Errorf("%w: header line %q", errNMBody, clip(line, 40))
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "www-authenticate":
			if v, _, _ := strings.Cut(value, " "); strings.EqualFold(v, "Negotiate") {
				resp.negotiate = true
			}
		case "content-length":
			if length, err = strconv.ParseInt(value, 10, 64); err != nil || length < 0 {
				return resp, fmt.Errorf("%w: Content-Length %q", errNMBody, clip(value, 20))
			}
		case "transfer-encoding":
			chunked = strings.EqualFold(value, "chunked")
		}
	}
	switch {
	case chunked:
		for {
			line, err := readNMLine(r)
			if err != nil {
				return resp, err
			}
			size, _, _ := strings.Cut(line, ";")
			n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
			if err != nil || n < 0 {
				return resp, fmt.Errorf("%w: chunk size %q", errNMBody, clip(line, 20))
			}
			if n == 0 {
				return resp, nil // no trailer is read: the connection closes
			}
			if int64(len(resp.body))+n > limit {
				return resp, fmt.Errorf("%w: more than %d bytes", errNMBody, limit)
			}
			start := len(resp.body)
			resp.body = append(resp.body, make([]byte, n)...)
			if _, err := io.ReadFull(r, resp.body[start:]); err != nil {
				return resp, err
			}
			if crlf, err := readNMLine(r); err != nil || crlf != "" {
				return resp, fmt.Errorf("%w: a chunk not followed by CRLF", errNMBody)
			}
		}
	case length >= 0:
		if length > limit {
			return resp, fmt.Errorf("%w: %d bytes, more than %d", errNMBody, length, limit)
		}
		resp.body = make([]byte, length)
		_, err := io.ReadFull(r, resp.body)
		return resp, err
	default:
		resp.body, err = io.ReadAll(io.LimitReader(r, limit))
		return resp, err
	}
}

// readNMLine reads one line of the header without its CRLF (or LF).
func readNMLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return "", fmt.Errorf("%w: a header line too long", errNMBody)
		}
		return "", err
	}
	return strings.TrimRight(string(line), "\r\n"), nil
}
