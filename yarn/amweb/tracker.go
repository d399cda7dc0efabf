package amweb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn/amdraw"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
	"github.com/xres/xres/yarn/internal/logutil"
)

// StatusSource is what the tracking server shows and feeds: the AM.
type StatusSource interface {
	Status() amstatus.Status
	ReportDevices(r contract.DeviceReport) error
}

// Tracking server paths.
const (
	PathStatus = "/api/status"
	// PathWorkers answers WorkerCount: what a worker reads to learn how
	// many workers the application has now (EnvWorkersURL).
	PathWorkers = "/api/workers"
	PathReport  = contract.ReportPath // the launcher posts here (the shared contract)
	// PathMetrics serves the AM's Prometheus metrics (WithMetrics).
	PathMetrics = "/metrics"
)

const maxReportBytes = 1 << 20

// PageSize is how many containers the tracking page lists at a time.
const PageSize = 100

// Pager is a StatusSource that copies only the containers asked for (the
// AM); others are paged from their whole Status.
type Pager interface {
	StatusPage(p amstatus.Page) amstatus.Status
}

// statusPage answers a page of src's status; limit is the default Limit.
func statusPage(src StatusSource, r *http.Request, limit int) (amstatus.Status, error) {
	q := r.URL.Query()
	p := amstatus.Page{Limit: limit, State: strings.ToUpper(q.Get("state")), Phases: q.Get("phases") == "true", Idle: true}
	for key, dst := range map[string]*int{"offset": &p.Offset, "limit": &p.Limit} {
		if v := q.Get(key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return amstatus.Status{}, fmt.Errorf("query parameter %s=%q: want a count", key, v)
			}
			*dst = n
		}
	}
	if pg, ok := src.(Pager); ok {
		s := pg.StatusPage(p)
		s.CollectDeviceEvents() // the listed workers' (amstatus/deviceevents.go)
		return s, nil
	}
	s := src.Status()
	var cs []amstatus.WorkerStatus
	for _, c := range s.Containers {
		if p.State == "" || c.State == p.State {
			cs = append(cs, c)
		}
	}
	s.ContainersTotal, s.Offset = len(cs), p.Offset
	cs = cs[min(p.Offset, len(cs)):]
	if p.Limit > 0 && len(cs) > p.Limit {
		cs = cs[:p.Limit]
	}
	s.Containers = append([]amstatus.WorkerStatus{}, cs...)
	s.CollectDeviceEvents()
	return s, nil
}

// EnvWorkersURL names, in every worker's environment, the URL of
// PathWorkers on the AM's tracking server; EnvWorkers the number of
// workers wanted (of every group) when the worker was started (the
// launcher's contract).
const (
	EnvWorkersURL = contract.EnvWorkersURL
	EnvWorkers    = contract.EnvWorkers
)

// ReportCounter is a StatusSource that counts the launcher reports it
// took, with their size (the AM's metrics).
type ReportCounter interface {
	CountReport(r contract.DeviceReport, bytes int)
}

// GPUSource is a StatusSource whose workers send GPU samples (the AM):
// the page draws the listed workers' GPUs.
type GPUSource interface {
	WorkerGPUs() []amstatus.WorkerGPUs
}

// TrackerOption configures NewTracker.
type TrackerOption func(*trackerOptions)

type trackerOptions struct {
	secret  []byte
	proxy   *WebProxy
	logs    amdraw.NodeLogs
	now     func() time.Time // the refusal log's clock (tests)
	metrics http.Handler     // GET /metrics (WithMetrics)
}

// WithReportSecret is the application's report secret
// (contract.ReportSecretAlias in the AM's credentials): a device report,
// a rendezvous or worker-address request is taken only when signed with
// the key derived from it for the container it names
// (contract.ContainerKey), and the answers are signed with that key.
// Without this option (or with an empty secret) every one is refused.
func WithReportSecret(secret []byte) TrackerOption {
	return func(o *trackerOptions) { o.secret = secret }
}

// WithWebProxy serves the page and the read APIs only to the RM's web
// proxy p, redirecting other callers there (see WebProxy); nil: served
// to every caller (tests, a tracker outside YARN).
func WithWebProxy(p *WebProxy) TrackerOption {
	return func(o *trackerOptions) { o.proxy = p }
}

// WithMetrics serves h (the AM's Prometheus metrics, yarn/ammetrics) at
// GET /metrics, under the page's rule: with WithWebProxy, to the RM's web
// proxy alone (Prometheus scrapes <RM web app>/proxy/<application>/metrics,
// see docs/metrics.md).
func WithMetrics(h http.Handler) TrackerOption {
	return func(o *trackerOptions) { o.metrics = h }
}

// withClock sets the clock of the refusal log (tests).
func withClock(now func() time.Time) TrackerOption {
	return func(o *trackerOptions) { o.now = now }
}

// WithNodeLogLinks links each container of the page's timeline to its logs
// on its NodeManager's web UI: scheme "http" (the default, also for "") or
// "https" (yarn.http.policy HTTPS_ONLY), user the application's owner
// (http://<node>/node/containerlogs/<container>/<user>). Without it (or
// with no user) a container links to its page on the NodeManager
// (/node/container/<container>), which links its logs.
func WithNodeLogLinks(scheme, user string) TrackerOption {
	return func(o *trackerOptions) { o.logs = amdraw.NodeLogs{Scheme: scheme, User: user} }
}

// NewTracker returns the AM's tracking server handler:
//
//	GET  /            HTML page: workers, hosts, state, restarts, the start
//	                  timeline of the listed containers (inline SVG, linked to
//	                  their NodeManager logs), and the containers with their
//	                  devices, PageSize at a time
//	GET  /api/status  the same as JSON (Status), every container
//	GET  /metrics     the AM's Prometheus metrics (WithMetrics; read-only,
//	                  served as the page is)
//	GET  /api/workers the worker counts (WorkerCount), for the workers;
//	                  the groups' addresses only with ?container=ID, signed
//	                  with that container's key over contract.WorkersMessage(ID)
//	                  and a nonce (the answer is then signed too)
//	POST /api/report  a launcher's contract.DeviceReport (JSON), signed
//	                  (contract.HeaderReportSignature) with its container's
//	                  key; 204 when recorded, 401 unsigned, 403 signed with
//	                  another key, 409 not newer than the last (a replay)
//	GET  /api/rendezvous?container=ID  a launcher's rank, peers and go
//	                  (contract.Rendezvous), signed as reports are over
//	                  contract.RendezvousMessage(ID), with a nonce
//	                  (contract.HeaderNonce); the answer is signed over
//	                  contract.AnswerMessage (contract.HeaderAnswerSignature)
//
// Refused requests are logged at most once per refusalLogEvery, with the
// count of those not logged since.
//
// Both GETs take ?state=RUNNING (or STARTING, STANDBY, SUCCEEDED, FAILED) to list
// only the containers in that state, and ?offset=N&limit=M for a page; the
// counts always cover every container.
//
// With WithWebProxy, every path but POST /api/report and GET
// /api/rendezvous (authenticated by the signature) and GET /api/workers (what the workers read from inside the
// cluster: counts only, unless signed) is served to the RM's web proxy alone, where the
// RM applies the application's view ACLs; a direct request is redirected
// there, as Hadoop's AmIpFilter does.
func NewTracker(src StatusSource, log logrus.FieldLogger, opts ...TrackerOption) http.Handler {
	log = logutil.OrDiscard(log)
	var o trackerOptions
	for _, opt := range opts {
		opt(&o)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathStatus, func(w http.ResponseWriter, r *http.Request) {
		st, err := statusPage(src, r, 0)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st)
	})
	refusals := &refusalLog{log: log, every: refusalLogEvery, now: o.now}
	mux.HandleFunc("GET "+PathWorkers, func(w http.ResponseWriter, r *http.Request) {
		// A signed request (a launcher's) is checked before anything is
		// read; an unsigned one gets the counts without addresses.
		id, auth := "", r.Header.Get(contract.HeaderReportSignature) != ""
		if auth {
			var ok bool
			if id, ok = signedGet(w, r, o.secret, contract.WorkersMessage, refusals); !ok {
				return
			}
		}
		var st amstatus.Status
		if pg, ok := src.(Pager); ok {
			st = pg.StatusPage(amstatus.Page{Limit: -1})
		} else {
			st = src.Status()
		}
		c := st.Count()
		if !auth {
			for i := range c.Groups {
				c.Groups[i].Addresses = nil
			}
		}
		body, err := json.Marshal(c)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeAnswer(w, o.secret, contract.AnswerWorkers, id, r.Header.Get(contract.HeaderNonce), append(body, '\n'))
	})
	mux.HandleFunc("POST "+PathReport, func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReportBytes))
		if err != nil {
			http.Error(w, fmt.Sprintf("bad device report: %v", err), http.StatusBadRequest)
			return
		}
		// Authenticated before anything of the body is believed (its
		// container only picks the key to check with); the answer and the
		// log say only that it was refused.
		sig := r.Header.Get(contract.HeaderReportSignature)
		if sig == "" {
			w.Header().Set("WWW-Authenticate", `HMAC-SHA256 realm="xres device report"`)
			refusals.refuse(w, r, http.StatusUnauthorized, "device report refused: not signed with the container's key")
			return
		}
		var rep contract.DeviceReport
		if err := json.Unmarshal(body, &rep); err != nil {
			http.Error(w, fmt.Sprintf("bad device report: %v", err), http.StatusBadRequest)
			return
		}
		if !contract.VerifyReport(contract.ContainerKey(o.secret, rep.Container), body, sig) {
			refusals.refuse(w, r, http.StatusForbidden, "device report refused: bad signature")
			return
		}
		if rep.Seq == 0 {
			http.Error(w, "device report refused: it has no seq (a launcher older than this AM?)", http.StatusBadRequest)
			return
		}
		if err := src.ReportDevices(rep); err != nil {
			code := http.StatusInternalServerError
			switch {
			case errors.Is(err, amstatus.ErrUnknownContainer):
				code = http.StatusNotFound
			case errors.Is(err, amstatus.ErrStaleReport):
				refusals.refuse(w, r, http.StatusConflict, "device report refused: not newer than the last one taken (a replay?)")
				return
			}
			http.Error(w, err.Error(), code)
			return
		}
		if rc, ok := src.(ReportCounter); ok {
			rc.CountReport(rep, len(body))
		}
		if amstatus.IsSamples(rep) {
			// every xres.metrics.interval: not logged
		} else if len(rep.Resources) == 0 && !rep.CommandStarted.IsZero() {
			log.WithField("container", rep.Container).Debug("launcher reported its worker command started")
		} else {
			log.WithFields(logrus.Fields{"container": rep.Container, "resources": sortedKeys(rep.Resources)}).Info("launcher reported devices")
		}
		w.WriteHeader(http.StatusNoContent)
	})
	handleRendezvous(mux, src, o.secret, refusals)
	if o.metrics != nil {
		mux.Handle("GET "+PathMetrics, o.metrics)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		st, err := statusPage(src, r, PageSize)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page := htmlPage{Status: st, Limit: max(len(st.Containers), PageSize), State: strings.ToUpper(r.URL.Query().Get("state")), logs: o.logs}
		if gs, ok := src.(GPUSource); ok {
			page.gpus = gs.WorkerGPUs
		}
		if err := writeStatusPage(w, page); err != nil {
			log.WithError(err).Warn("rendering status page failed")
		}
	})
	if o.proxy == nil {
		return mux
	}
	return o.proxy.filter(mux, func(r *http.Request) bool {
		get := r.Method == http.MethodGet || r.Method == http.MethodHead
		return (r.Method == http.MethodPost && r.URL.Path == PathReport) ||
			(get && r.URL.Path == PathWorkers) || (get && r.URL.Path == contract.RendezvousPath)
	}, log)
}

// htmlPage is what the tracking page renders: a page of the status and
// the query that selected it.
type htmlPage struct {
	amstatus.Status
	Limit int
	State string
	logs  amdraw.NodeLogs
	gpus  func() []amstatus.WorkerGPUs // nil: no GPU samples
}

// GPUDrawing draws the GPUs of the listed workers over time; "" when none
// sent samples.
func (p htmlPage) GPUDrawing() string {
	if p.gpus == nil {
		return ""
	}
	listed := make(map[string]bool, len(p.Containers))
	for _, c := range p.Containers {
		listed[c.Container] = true
	}
	var ws []amstatus.WorkerGPUs
	for _, w := range p.gpus() {
		if listed[w.Container] {
			ws = append(ws, w)
		}
	}
	return amdraw.DrawGPUs(ws)
}

// Timeline is the drawing of the listed containers' starts; nil when none
// is listed.
func (p htmlPage) Timeline() *amdraw.View { return amdraw.Draw(p.Status, p.logs) }

// Prev and Next are the offsets of the neighbouring pages; -1 when none.
func (p htmlPage) Prev() int {
	if p.Offset == 0 {
		return -1
	}
	return max(p.Offset-p.Limit, 0)
}

func (p htmlPage) Next() int {
	if n := p.Offset + len(p.Containers); n < p.ContainersTotal {
		return n
	}
	return -1
}

// First and Last number the listed containers from 1.
func (p htmlPage) First() int { return p.Offset + 1 }
func (p htmlPage) Last() int  { return p.Offset + len(p.Containers) }

// Listen binds the tracking server. port is Flink's rest.bind-port syntax:
// a port, a range "50100-50200" or a list "50100,50105-50110"; "0" or ""
// lets the system pick.
func Listen(ctx context.Context, address, port string) (net.Listener, error) {
	if strings.TrimSpace(address) == "" {
		address = "0.0.0.0"
	}
	ports, err := parsePorts(port)
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	var last error
	for _, p := range ports {
		l, err := lc.Listen(ctx, "tcp", net.JoinHostPort(address, strconv.Itoa(p)))
		if err == nil {
			return l, nil
		}
		last = err
	}
	return nil, fmt.Errorf("bind tracking server on %s port %s: %w", address, port, last)
}

func parsePorts(spec string) ([]int, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return []int{0}, nil
	}
	var out []int
	bad := func() error {
		return fmt.Errorf("%w: %s=%q is not a port, range or list", amplan.ErrBadConfig, amplan.KeyBindPort, spec)
	}
	for _, part := range strings.Split(spec, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || a < 0 || a > 65535 {
			return nil, bad()
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a || b > 65535 {
				return nil, bad()
			}
		}
		for p := a; p <= b; p++ {
			out = append(out, p)
		}
	}
	return out, nil
}

// The tracking server's bounds: a request's header must arrive within
// ReadHeaderTimeout and the whole request within ReadTimeout (a body
// trickled a byte at a time holds no connection longer), an idle
// keep-alive connection is closed after IdleTimeout, an answer must be
// written within WriteTimeout, and no request body may exceed
// maxRequestBytes (a device report is at most maxReportBytes).
var serverLimits = struct {
	ReadHeaderTimeout, ReadTimeout, IdleTimeout, WriteTimeout time.Duration
}{10 * time.Second, 20 * time.Second, 60 * time.Second, 60 * time.Second}

const (
	maxRequestBytes = maxReportBytes + 1
	maxHeaderBytes  = 64 << 10
)

// newServer is the tracking server for h, with serverLimits.
func newServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           http.MaxBytesHandler(h, maxRequestBytes),
		ReadHeaderTimeout: serverLimits.ReadHeaderTimeout,
		ReadTimeout:       serverLimits.ReadTimeout,
		IdleTimeout:       serverLimits.IdleTimeout,
		WriteTimeout:      serverLimits.WriteTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// Serve runs h on l until ctx ends, then shuts down gracefully.
func Serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := newServer(h)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("tracking server: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	}
}

// PostDeviceReport POSTs a launcher's report to the AM at url (the value of
// XRES_AM_REPORT_URL), signed with key (the container's,
// contract.ContainerKeyAlias of its credentials; none when empty), and
// wants 204. A report without a Seq gets the clock's nanoseconds. The
// container-launcher sends its report with its own client (driver/launch,
// which may not import yarn/); this one serves tests and tools on the AM's
// side.
func PostDeviceReport(ctx context.Context, client *http.Client, url string, key []byte, r contract.DeviceReport) error {
	if client == nil {
		client = http.DefaultClient
	}
	if r.Seq == 0 {
		r.Seq = uint64(time.Now().UnixNano())
	}
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("report devices to %s: %w", url, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return fmt.Errorf("report devices to %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if len(key) > 0 {
		req.Header.Set(contract.HeaderReportSignature, contract.SignReport(key, body))
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("report devices to %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("report devices to %s: %s: %s", url, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// refusalLogEvery is how often at most the tracking server logs a refused
// request (a thousand unsigned requests make one line, then one with their
// count).
const refusalLogEvery = time.Minute

// refusalLog logs refused requests: the first, then at most one line per
// interval, which counts those not logged since.
type refusalLog struct {
	log   logrus.FieldLogger
	every time.Duration
	now   func() time.Time

	mu         sync.Mutex
	next       time.Time // no line before
	suppressed int
}

// refuse answers r with code and why, and logs it when its turn has come.
func (l *refusalLog) refuse(w http.ResponseWriter, r *http.Request, code int, why string) {
	http.Error(w, why, code)
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	l.mu.Lock()
	t := now()
	if t.Before(l.next) {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.suppressed, l.next = 0, t.Add(l.every)
	l.mu.Unlock()
	f := logrus.Fields{"remote": r.RemoteAddr, "path": r.URL.Path, "status": code}
	if n > 0 {
		f["refused_not_logged"] = n
	}
	l.log.WithFields(f).Warnf("%s (refused requests are logged at most once per %s, with the count of those not logged)", why, l.every)
}

// signedGet checks a launcher's signed GET: ?container=ID, signed with
// that container's key over msg(ID), with a nonce. It answers the request
// itself (and reports false) when it is refused.
func signedGet(w http.ResponseWriter, r *http.Request, secret []byte, msg func(string) []byte, refusals *refusalLog) (string, bool) {
	id := r.URL.Query().Get("container")
	if id == "" {
		http.Error(w, "query parameter container is required", http.StatusBadRequest)
		return "", false
	}
	sig := r.Header.Get(contract.HeaderReportSignature)
	if sig == "" {
		w.Header().Set("WWW-Authenticate", `HMAC-SHA256 realm="xres device report"`)
		refusals.refuse(w, r, http.StatusUnauthorized, "request refused: not signed with the container's key")
		return "", false
	}
	if !contract.VerifyReport(contract.ContainerKey(secret, id), msg(id), sig) {
		refusals.refuse(w, r, http.StatusForbidden, "request refused: bad signature")
		return "", false
	}
	if err := contract.CheckNonce(r.Header.Get(contract.HeaderNonce)); err != nil {
		http.Error(w, fmt.Sprintf("header %s: %v", contract.HeaderNonce, err), http.StatusBadRequest)
		return "", false
	}
	return id, true
}

// writeAnswer writes a JSON answer, signed with the container's key over
// contract.AnswerMessage when id is a container whose request was signed.
func writeAnswer(w http.ResponseWriter, secret []byte, kind, id, nonce string, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body))) // never chunked: the launcher reads one body
	if id != "" {
		w.Header().Set(contract.HeaderAnswerSignature, contract.SignReport(contract.ContainerKey(secret, id), contract.AnswerMessage(kind, id, nonce, body)))
	}
	_, _ = w.Write(body)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
