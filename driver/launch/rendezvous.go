package launch

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
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
// returns the status code, the status and the body (at most 1 MiB).
type GetFunc func(ctx context.Context, url string, header map[string]string) (code int, status string, body []byte, err error)

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
	url       string // the AM's rendezvous endpoint, with ?container=
	sig       string // contract.RendezvousMessage signed with the report secret; "": none
	wait      bool   // the worker must not start before the AM says so
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
				if len(ans.Probe) > 0 {
					if err := r.probe(ctx, ans.Probe); err != nil {
						return nil, err
					}
				}
				r.log.WithFields(logrus.Fields{"group": ans.Group, "rank": ans.Rank, "world_size": ans.WorldSize}).Info("rendezvous complete; starting the worker")
				return ans.Env, nil
			}
			if !r.wait {
				r.log.WithField("waiting", ans.Waiting).Warn("the application master says this worker waits, but its group does not wait; starting it")
				return ans.Env, nil
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
	var header map[string]string
	if r.sig != "" {
		header = map[string]string{contract.HeaderReportSignature: r.sig}
	}
	code, status, body, err := r.get(cctx, r.url, header)
	if err != nil {
		return contract.Rendezvous{}, fmt.Errorf("rendezvous %s: %w", r.url, err)
	}
	if code != 200 {
		return contract.Rendezvous{}, fmt.Errorf("rendezvous %s: %s: %s", r.url, status, strings.TrimSpace(string(body)))
	}
	var ans contract.Rendezvous
	if err := json.Unmarshal(body, &ans); err != nil {
		return contract.Rendezvous{}, fmt.Errorf("rendezvous %s: bad answer: %w", r.url, err)
	}
	return ans, nil
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

// rendezvousSignature signs the container's rendezvous requests with the
// report secret of the credentials file tokenFile names; "" without one
// (the AM then refuses them, and the report's warning said why).
func rendezvousSignature(tokenFile, container string) string {
	secret, _ := reportSecret(tokenFile)
	if secret == nil {
		return ""
	}
	return contract.SignReport(secret, contract.RendezvousMessage(container))
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
func getHTTP(ctx context.Context, rawURL string, header map[string]string) (int, string, []byte, error) {
	return exchange(ctx, "GET", rawURL, "", header, nil, 1<<20)
}
