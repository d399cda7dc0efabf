package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/sirupsen/logrus"

	"github.com/xres/xres/yarn/internal/logutil"
)

// Errors callers test for. A *RemoteError matches the first three by HTTP
// status.
var (
	ErrNotFound     = errors.New("not found")                  // 404
	ErrBadRequest   = errors.New("bad request")                // 400
	ErrUnauthorized = errors.New("not authorized")             // 401, 403
	ErrNoActiveRM   = errors.New("no active resourcemanager")  // every endpoint failed or was standby
	ErrAppState     = errors.New("application in wrong state") // WaitForState saw a terminal state it did not want
)

// Defaults for Config's zero values.
const (
	DefaultTimeout      = 60 * time.Second
	DefaultRetries      = 2
	DefaultRetryWaitMin = 100 * time.Millisecond
	DefaultRetryWaitMax = 2 * time.Second
	DefaultMaxRedirects = 3
	maxBody             = 64 << 20
)

// Config configures a Client.
type Config struct {
	// Endpoints are the RM web base URLs in failover order, e.g. from
	// yarn.RMWebappURLs: "http://rm1:8088", "http://rm2:8088".
	Endpoints []string
	// User is sent as ?user.name= (Hadoop simple auth). Write calls need it
	// on an insecure cluster. Leave empty with Kerberos.
	User string
	// Auth adds credentials (SPNEGO) to every request and retry.
	Auth Authenticator
	// HTTPClient is the base client (TLS settings, proxies); nil uses a
	// pooled client. Its redirect policy is replaced: the Client follows
	// standby redirects itself.
	HTTPClient *http.Client
	// Timeout bounds a call whose context has no deadline (0: DefaultTimeout).
	Timeout time.Duration
	// Retries per endpoint on connection errors, 429 and 503 before failing
	// over (0: DefaultRetries; negative: none).
	Retries int
	// RetryWaitMin/Max bound the exponential backoff between retries.
	RetryWaitMin, RetryWaitMax time.Duration
	// MaxRedirects bounds the standby redirects followed per endpoint
	// (0: DefaultMaxRedirects).
	MaxRedirects int
	// Log receives failover and retry notices (nil: discard).
	Log logrus.FieldLogger
}

// Client talks to the RM REST API of one cluster. It is safe for concurrent
// use.
type Client struct {
	endpoints    []*url.URL
	active       atomic.Pointer[url.URL] // the RM that answered last
	user         string
	auth         Authenticator
	http         *retryablehttp.Client
	timeout      time.Duration
	maxRedirects int
	log          logrus.FieldLogger
}

// New checks the configuration and builds a Client. It does no I/O.
func New(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("new rm rest client: no endpoints")
	}
	c := &Client{user: cfg.User, auth: cfg.Auth, timeout: cfg.Timeout, maxRedirects: cfg.MaxRedirects, log: logutil.OrDiscard(cfg.Log)}
	for _, e := range cfg.Endpoints {
		u, err := url.Parse(strings.TrimRight(strings.TrimSpace(e), "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("new rm rest client: endpoint %q: want http(s)://host:port", e)
		}
		c.endpoints = append(c.endpoints, u)
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxRedirects <= 0 {
		c.maxRedirects = DefaultMaxRedirects
	}
	rc := retryablehttp.NewClient()
	hc := *rc.HTTPClient // retryablehttp's pooled client, with its own transport
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if hc.Jar == nil {
		// Keeps the hadoop.auth cookie, so SPNEGO runs once per session.
		jar, err := cookiejar.New(nil)
		if err != nil {
			return nil, fmt.Errorf("new rm rest client: %w", err)
		}
		hc.Jar = jar
	}
	rc.HTTPClient = &hc
	rc.Logger = retryLogger{c.log}
	rc.RetryMax = cfg.Retries
	switch {
	case cfg.Retries == 0:
		rc.RetryMax = DefaultRetries
	case cfg.Retries < 0:
		rc.RetryMax = 0
	}
	rc.RetryWaitMin, rc.RetryWaitMax = cfg.RetryWaitMin, cfg.RetryWaitMax
	if rc.RetryWaitMin <= 0 {
		rc.RetryWaitMin = DefaultRetryWaitMin
	}
	if rc.RetryWaitMax <= 0 {
		rc.RetryWaitMax = DefaultRetryWaitMax
	}
	rc.CheckRetry = retryPolicy
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	if c.auth != nil {
		rc.PrepareRetry = c.auth.Authenticate
	}
	c.http = rc
	return c, nil
}

// Endpoints returns the configured base URLs in failover order.
func (c *Client) Endpoints() []string {
	out := make([]string, len(c.endpoints))
	for i, u := range c.endpoints {
		out[i] = u.String()
	}
	return out
}

// Active returns the base URL of the RM that answered last ("" before any
// call).
func (c *Client) Active() string {
	if u := c.active.Load(); u != nil {
		return u.String()
	}
	return ""
}

// retryPolicy retries transport errors (but not bad schemes, TLS trust or
// redirect loops), 429 and 503; never once the context is done. Other
// statuses are answers, not outages.
func retryPolicy(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	}
	return resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests, nil
}

// RemoteError is an error answer from the RM: the HTTP status and, when the
// RM sent one, its RemoteException.
type RemoteError struct {
	Method        string
	URL           string // without the query string
	StatusCode    int
	Status        string // e.g. "404 Not Found"
	Exception     string // e.g. NotFoundException
	JavaClassName string // e.g. org.apache.hadoop.yarn.webapp.NotFoundException
	Message       string // the RM's message, or the start of a non-JSON body
}

// Error implements error: "yarn rest GET url: 404 Not Found: NotFoundException: message".
func (e *RemoteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "yarn rest %s %s: %s", e.Method, e.URL, e.Status)
	if e.Exception != "" {
		b.WriteString(": " + e.Exception)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Is matches ErrNotFound, ErrBadRequest and ErrUnauthorized by status.
func (e *RemoteError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrBadRequest:
		return e.StatusCode == http.StatusBadRequest
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden
	}
	return false
}

// remoteExceptionJSON is the RM's error body.
type remoteExceptionJSON struct {
	RemoteException struct {
		Exception     string `json:"exception"`
		JavaClassName string `json:"javaClassName"`
		Message       string `json:"message"`
	} `json:"RemoteException"`
}

// call is one logical request: a path under /ws/v1, query, optional JSON
// body, accepted statuses and where to decode the answer.
type call struct {
	method string
	path   string
	query  url.Values
	body   any
	ok     []int
	out    any
	// base pins the call to one RM, without failover (HA discovery).
	base *url.URL
}

// do runs a call with retries, standby redirects and failover.
func (c *Client) do(ctx context.Context, cl call) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var payload []byte
	if cl.body != nil {
		var err error
		if payload, err = json.Marshal(cl.body); err != nil {
			return fmt.Errorf("yarn rest %s %s: encode body: %w", cl.method, cl.path, err)
		}
	}
	bases := c.order()
	if cl.base != nil {
		bases = []*url.URL{cl.base}
	}
	var failures []string
	var lastErr error
	for _, base := range bases {
		err := c.tryEndpoint(ctx, base, cl, payload)
		if err == nil {
			return nil
		}
		var fo *failoverError
		if !errors.As(err, &fo) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("yarn rest %s %s: %w", cl.method, cl.path, ctx.Err())
		}
		failures = append(failures, fmt.Sprintf("%s: %v", base.Host, fo.err))
		lastErr = fo.err
		c.log.WithFields(logrus.Fields{"rm": base.String(), "path": cl.path, "error": fo.err.Error()}).Warn("rm rest: endpoint failed, trying the next")
	}
	return fmt.Errorf("yarn rest %s %s: %w: %s: %w", cl.method, cl.path, ErrNoActiveRM, strings.Join(failures, "; "), lastErr)
}

// order returns the endpoints, the last active one first.
func (c *Client) order() []*url.URL {
	a := c.active.Load()
	if a == nil {
		return c.endpoints
	}
	out := make([]*url.URL, 0, len(c.endpoints)+1)
	out = append(out, a)
	for _, u := range c.endpoints {
		if u.Scheme != a.Scheme || u.Host != a.Host {
			out = append(out, u)
		}
	}
	return out
}

// failoverError marks an outcome that sends the call to the next RM.
type failoverError struct{ err error }

func (f *failoverError) Error() string { return f.err.Error() }
func (f *failoverError) Unwrap() error { return f.err }

var errStandby = errors.New("standby resourcemanager")

func (c *Client) tryEndpoint(ctx context.Context, base *url.URL, cl call, payload []byte) error {
	target := base.JoinPath(cl.path)
	q := url.Values{}
	for k, v := range cl.query {
		q[k] = v
	}
	if c.user != "" {
		q.Set("user.name", c.user)
	}
	target.RawQuery = q.Encode()
	for hop := 0; ; hop++ {
		resp, err := c.send(ctx, cl.method, target, payload)
		if err != nil {
			if resp != nil {
				_ = resp.Body.Close()
			}
			return &failoverError{err}
		}
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		_ = resp.Body.Close()
		if rerr != nil {
			return &failoverError{fmt.Errorf("read answer: %w", rerr)}
		}
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			loc := resp.Header.Get("Location")
			if loc == "" {
				return &failoverError{fmt.Errorf("%w: %s without Location: %s", errStandby, resp.Status, snippet(body))}
			}
			if hop >= c.maxRedirects {
				return &failoverError{fmt.Errorf("%w: more than %d redirects, last to %s", errStandby, c.maxRedirects, loc)}
			}
			next, err := target.Parse(loc)
			if err != nil {
				return &failoverError{fmt.Errorf("%w: bad redirect %q: %w", errStandby, loc, err)}
			}
			c.log.WithFields(logrus.Fields{"from": target.Host, "to": next.Host, "path": cl.path}).Debug("rm rest: following standby redirect")
			target = next
			continue
		}
		if resp.StatusCode == http.StatusServiceUnavailable || isStandbyPage(resp, body) {
			return &failoverError{fmt.Errorf("%w: %s: %s", errStandby, resp.Status, snippet(body))}
		}
		if !accepted(resp.StatusCode, cl.ok) {
			return remoteError(cl.method, target, resp, body)
		}
		c.active.Store(&url.URL{Scheme: target.Scheme, Host: target.Host})
		if cl.out != nil && len(bytes.TrimSpace(body)) > 0 {
			if err := json.Unmarshal(body, cl.out); err != nil {
				return fmt.Errorf("yarn rest %s %s: decode answer: %w", cl.method, stripQuery(target), err)
			}
		}
		return nil
	}
}

func (c *Client) send(ctx context.Context, method string, target *url.URL, payload []byte) (*http.Response, error) {
	var raw any
	if payload != nil {
		raw = payload
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, method, target.String(), raw)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != nil {
		if err := c.auth.Authenticate(req.Request); err != nil {
			return nil, err
		}
	}
	return c.http.Do(req)
}

func accepted(code int, ok []int) bool {
	if len(ok) == 0 {
		return code == http.StatusOK
	}
	for _, c := range ok {
		if c == code {
			return true
		}
	}
	return false
}

// isStandbyPage catches a standby RM that answers with its notice page
// rather than a redirect.
func isStandbyPage(resp *http.Response, body []byte) bool {
	if strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return false
	}
	return bytes.Contains(body, []byte("This is standby RM"))
}

func remoteError(method string, target *url.URL, resp *http.Response, body []byte) error {
	e := &RemoteError{Method: method, URL: stripQuery(target), StatusCode: resp.StatusCode, Status: resp.Status}
	var rx remoteExceptionJSON
	if json.Unmarshal(body, &rx) == nil && (rx.RemoteException.Exception != "" || rx.RemoteException.Message != "") {
		e.Exception = rx.RemoteException.Exception
		e.JavaClassName = rx.RemoteException.JavaClassName
		e.Message = rx.RemoteException.Message
	} else {
		e.Message = snippet(body)
	}
	return e
}

func stripQuery(u *url.URL) string {
	v := *u
	v.RawQuery = ""
	return v.String()
}

// snippet returns the start of a body for an error message.
func snippet(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// retryLogger sends go-retryablehttp's messages to logrus at debug level.
type retryLogger struct{ log logrus.FieldLogger }

func (l retryLogger) fields(kv []any) logrus.Fields {
	f := logrus.Fields{}
	for i := 0; i+1 < len(kv); i += 2 {
		f[fmt.Sprint(kv[i])] = kv[i+1]
	}
	return f
}
func (l retryLogger) Error(msg string, kv ...any) { l.log.WithFields(l.fields(kv)).Debug(msg) }
func (l retryLogger) Info(msg string, kv ...any)  { l.log.WithFields(l.fields(kv)).Debug(msg) }
func (l retryLogger) Debug(msg string, kv ...any) { l.log.WithFields(l.fields(kv)).Debug(msg) }
func (l retryLogger) Warn(msg string, kv ...any)  { l.log.WithFields(l.fields(kv)).Debug(msg) }

var _ retryablehttp.LeveledLogger = retryLogger{}
