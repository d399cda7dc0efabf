package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/resources/contract"
)

// The launcher's side of a worker group's rendezvous (contract.Rendezvous):
// pick the worker's port, report it with the devices, wait until the AM
// says the worker may run (gang complete, dependencies running), wait for
// the dependencies to accept connections, then start the worker with the
// AM's environment.

// Defaults of the rendezvous wait.
const (
	// DefaultRendezvousPoll is how often the launcher asks the AM.
	DefaultRendezvousPoll = 500 * time.Millisecond
	// rendezvousUnreachable bounds how long the AM may fail to answer
	// while a worker waits for it (the AM enforces xres.gang.timeout
	// itself, and stops the container then).
	rendezvousUnreachable = 5 * time.Minute
)

// GetFunc sends one HTTP GET to url, with the extra header fields, and
// returns the status code, the status, the answer's header fields (names
// in lower case) and the body (at most 1 MiB).
type GetFunc func(ctx context.Context, url string, header map[string]string) (code int, status string, fields map[string]string, body []byte, err error)

// rendezvousPort picks the worker's port from the group's wanted port
// ($XRES_PORT_WANTED): "" none (0), "auto" a free one, "worker" none yet
// (the worker picks it: watchPortFile), else that number.
func rendezvousPort(wanted string) (int, error) {
	wanted = strings.TrimSpace(wanted)
	switch {
	case wanted == "", strings.EqualFold(wanted, contract.PortWantedWorker):
		return 0, nil
	case strings.EqualFold(wanted, "auto"):
		// A free port now; the worker binds it right after. Another
		// process could take it between (rare): the worker then fails to
		// bind and is replaced.
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			return 0, fmt.Errorf("pick a free port for the worker (%s=auto): %w", contract.EnvPortWanted, err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	n, err := strconv.Atoi(wanted)
	if err != nil || n < 1 || n > 65535 {
		return 0, classifyf(ErrConfig, "%s=%q is not a port (auto, worker, or 1-65535)", contract.EnvPortWanted, wanted)
	}
	return n, nil
}

// portFilePoll is how often the launcher looks for the port a worker of a
// "worker" port group writes into $XRES_PORT_FILE.
const portFilePoll = 100 * time.Millisecond

// portReportTries bounds the reports of a worker's port (a second apart).
const portReportTries = 10

// watchPortFile waits, until ctx ends, for the worker to write its port
// into path: the number, then a newline (a file without its newline is
// still being written). It calls found once with the port. A complete
// file that is not a port is logged once and read again, so the worker
// may rewrite it.
func watchPortFile(ctx context.Context, path string, poll time.Duration, log logrus.FieldLogger, found func(port int)) {
	bad := ""
	for {
		if b, err := os.ReadFile(path); err == nil {
			if text, complete := strings.CutSuffix(string(b), "\n"); complete {
				text = strings.TrimSpace(text)
				if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= 65535 {
					found(n)
					return
				}
				if text != bad {
					bad = text
					log.WithFields(logrus.Fields{"file": path, "content": fmt.Sprintf("%.40q", text)}).
						Warn("the worker's port file holds no port (1-65535, then a newline); waiting for it to be rewritten")
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(poll):
		}
	}
}

// rendezvousWait is one launcher's wait for its AM.
type rendezvousWait struct {
	get       GetFunc
	url       string  // the AM's rendezvous endpoint, with ?container=
	auth      *amAuth // signs the asks and checks the answers; nil: no key (every answer refused)
	wait      bool    // the worker must not start before the AM says so
	poll      time.Duration
	log       logrus.FieldLogger
	now       func() time.Time
	reportNow func(ctx context.Context) error // (re-)sends the device report
}

// run asks the AM until it answers ready (with wait) or once (without),
// then waits for the answer's probe addresses to accept connections. It
// returns the environment to add to the worker's (nil: none).
func (r *rendezvousWait) run(ctx context.Context) (map[string]string, error) {
	if r.poll <= 0 {
		r.poll = DefaultRendezvousPoll
	}
	if r.now == nil {
		r.now = time.Now
	}
	var failingSince time.Time
	lastWhy := ""
	for {
		ans, err := r.ask(ctx)
		switch {
		case err == nil:
			failingSince = time.Time{}
			if ans.Ready {
				if probe := checkedProbe(ans.Probe, r.log); len(probe) > 0 {
					if err := r.probe(ctx, probe); err != nil {
						return nil, err
					}
				}
				r.log.WithFields(logrus.Fields{"group": ans.Group, "rank": ans.Rank, "world_size": ans.WorldSize}).Info("rendezvous complete; starting the worker")
				return rendezvousEnv(ans.Env, r.log), nil
			}
			if !r.wait {
				r.log.WithField("waiting", ans.Waiting).Warn("the application master says this worker waits, but its group does not wait; starting it")
				return rendezvousEnv(ans.Env, r.log), nil
			}
			if ans.Waiting != lastWhy {
				r.log.WithField("waiting_for", ans.Waiting).Info("waiting for the application master's go")
				lastWhy = ans.Waiting
			}
			if strings.Contains(ans.Waiting, "its own device report") && r.reportNow != nil {
				// The report was lost (the AM was busy or restarting): send again.
				if err := r.reportNow(ctx); err != nil {
					r.log.WithError(err).Warn("could not report the devices to the application master; retrying")
				}
			}
		case !r.wait:
			r.log.WithError(err).Warn("could not ask the application master for this worker's rank; starting it without XRES_RANK")
			return nil, nil
		default:
			if failingSince.IsZero() {
				failingSince = r.now()
				r.log.WithError(err).Warn("could not ask the application master for the go; retrying")
			} else if d := r.now().Sub(failingSince); d >= rendezvousUnreachable {
				return nil, fmt.Errorf("rendezvous: the application master has not answered for %s: %w", d.Round(time.Second), err)
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("rendezvous: %w", ctx.Err())
		case <-time.After(r.poll):
		}
	}
}

func (r *rendezvousWait) ask(ctx context.Context) (contract.Rendezvous, error) {
	cctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	get := r.get
	if r.auth != nil {
		get = r.auth.wrap(r.get, contract.AnswerRendezvous, contract.RendezvousMessage(r.auth.container))
	}
	code, status, _, body, err := get(cctx, r.url, nil)
	if err != nil {
		return contract.Rendezvous{}, fmt.Errorf("rendezvous %s: %w", contract.RedactURL(r.url), err)
	}
	if code != 200 {
		return contract.Rendezvous{}, fmt.Errorf("rendezvous %s: %s: %.512s", contract.RedactURL(r.url), status, strings.TrimSpace(string(body)))
	}
	if r.auth == nil {
		return contract.Rendezvous{}, fmt.Errorf("rendezvous %s: %w: this container has no key (%s) to check it with", contract.RedactURL(r.url), ErrAnswerNotAuthenticated, contract.ContainerKeyAlias)
	}
	var ans contract.Rendezvous
	if err := json.Unmarshal(body, &ans); err != nil {
		return contract.Rendezvous{}, fmt.Errorf("rendezvous %s: bad answer: %w", contract.RedactURL(r.url), err)
	}
	return ans, nil
}

// rendezvousEnv is what of an answer's environment reaches the worker:
// the variables xres defines for the rendezvous, each of its form
// (contract.CheckRendezvousVar). The others are dropped and logged by
// name (never by value).
func rendezvousEnv(env map[string]string, log logrus.FieldLogger) map[string]string {
	out := make(map[string]string, len(env))
	var dropped []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if err := contract.CheckRendezvousVar(k, env[k]); err != nil {
			dropped = append(dropped, fmt.Sprintf("%.64q", k))
			log.WithError(err).Debug("dropped a variable of the rendezvous answer")
			continue
		}
		out[k] = env[k]
	}
	if len(dropped) > 0 {
		log.WithField("dropped", strings.Join(dropped, ", ")).Warn("the application master's answer set variables xres does not define for the rendezvous (or values not of their form); the worker does not get them")
	}
	return out
}

// checkedProbe is the answer's probe addresses that are host:port; the
// others are dropped and logged.
func checkedProbe(addrs []string, log logrus.FieldLogger) []string {
	var out []string
	for _, a := range addrs {
		if err := contract.CheckAddress(a); err != nil {
			log.WithField("address", fmt.Sprintf("%.80q", a)).Warn("the application master's answer names a dependency address that is not host:port; not waiting for it")
			continue
		}
		out = append(out, a)
	}
	return out
}

// ErrAnswerNotAuthenticated marks an answer of the AM that its signature
// (contract.HeaderAnswerSignature) does not prove came from the AM, for
// this request: nothing of it is used.
var ErrAnswerNotAuthenticated = errors.New("the answer is not signed by the application master")

// amAuth signs a launcher's GETs to its AM with the container's key and
// checks the AM's answers.
type amAuth struct {
	key       []byte
	container string
}

// launcherAuth is the auth of container with the key of the credentials
// file tokenFile names; nil without one (the report's warning says why).
func launcherAuth(tokenFile, container string) *amAuth {
	key, _ := containerKey(tokenFile)
	if key == nil || container == "" {
		return nil
	}
	return &amAuth{key: key, container: container}
}

// wrap is get for the GETs of kind signed over msg: each with a fresh
// nonce, and an answer of 200 that the AM did not sign for it
// (contract.AnswerMessage) is ErrAnswerNotAuthenticated.
func (a *amAuth) wrap(get GetFunc, kind string, msg []byte) GetFunc {
	sig := contract.SignReport(a.key, msg)
	return func(ctx context.Context, url string, header map[string]string) (int, string, map[string]string, []byte, error) {
		var n [contract.NonceBytes]byte
		if _, err := rand.Read(n[:]); err != nil {
			return 0, "", nil, nil, fmt.Errorf("make a nonce: %w", err)
		}
		nonce := hex.EncodeToString(n[:])
		h := maps.Clone(header)
		if h == nil {
			h = map[string]string{}
		}
		h[contract.HeaderReportSignature], h[contract.HeaderNonce] = sig, nonce
		code, status, fields, body, err := get(ctx, url, h)
		if err != nil || code != 200 {
			return code, status, fields, body, err
		}
		if !contract.VerifyReport(a.key, contract.AnswerMessage(kind, a.container, nonce, body), fields[strings.ToLower(contract.HeaderAnswerSignature)]) {
			return code, status, fields, nil, ErrAnswerNotAuthenticated
		}
		return code, status, fields, body, nil
	}
}

// workers is get and url for reading the worker counts at url with the
// groups' addresses: signed, with ?container=, the answers checked; with
// no auth, get and url as they are (the counts alone).
func (a *amAuth) workers(get GetFunc, url string) (GetFunc, string) {
	if a == nil {
		return get, url
	}
	return a.wrap(get, contract.AnswerWorkers, contract.WorkersMessage(a.container)), rendezvousURL(url, a.container)
}

// probe waits until every address accepts a TCP connection (the
// dependencies' workers listen).
func (r *rendezvousWait) probe(ctx context.Context, addrs []string) error {
	var d net.Dialer
	for _, addr := range addrs {
		logged := false
		for {
			cctx, cancel := context.WithTimeout(ctx, reportTimeout)
			c, err := d.DialContext(cctx, "tcp", addr)
			cancel()
			if err == nil {
				c.Close()
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("rendezvous: wait for %s to listen: %w", addr, ctx.Err())
			}
			if !logged {
				r.log.WithField("address", addr).WithError(err).Info("waiting for a dependency to listen")
				logged = true
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("rendezvous: wait for %s to listen: %w", addr, ctx.Err())
			case <-time.After(r.poll):
			}
		}
	}
	return nil
}

// rendezvousURL is the endpoint with this container's id.
func rendezvousURL(base, container string) string {
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "container=" + url.QueryEscape(container)
}

// getHTTP is the launcher's own GetFunc, like postHTTP.
func getHTTP(ctx context.Context, rawURL string, header map[string]string) (int, string, map[string]string, []byte, error) {
	return exchange(ctx, "GET", rawURL, "", header, nil, 1<<20)
}
