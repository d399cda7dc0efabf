package launch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/contract"
)

// EnvContainerID is set by YARN in every container.
const EnvContainerID = "CONTAINER_ID"

// reportTimeout bounds the report; the worker starts either way.
const reportTimeout = 5 * time.Second

// commandReportWait is how long a launcher whose worker has ended waits for
// its command-started report (reportCommandStarted) to be sent.
const commandReportWait = time.Second

// EnvTokenFile names the container's credentials file (YARN sets it): the
// launcher reads its container's key there (contract.ContainerKeyAlias).
const EnvTokenFile = "HADOOP_TOKEN_FILE_LOCATION"

// maxTokenFile bounds the credentials file the launcher reads.
const maxTokenFile = 16 << 20

// newReport is the device report of a launcher that started at started
// and has reserved grants now (port: where the worker serves, 0 for none).
func newReport(container string, grants []Grant, port int, started time.Time) contract.DeviceReport {
	rep := contract.DeviceReport{Container: container, Resources: map[string][]resources.Properties{}, Port: port,
		LauncherStarted: started, Reserved: time.Now()}
	for _, g := range grants {
		rep.Resources[g.Spec.Name] = resources.PropertiesOf(g.Devices)
	}
	return rep
}

// postReport sends rep to url, signed with the report secret of the
// credentials file tokenFile names (contract.SignReport); success is
// contract.ReportAccepted. It first keeps the report as contract.ReportFile
// in the first of logDirs (the container's LOG_DIRS), where a later AM
// attempt reads it. Failures are returned for the log; they never stop the
// worker. Without a secret the report goes unsigned and the AM refuses it
// (the error says why).
func postReport(ctx context.Context, post PostFunc, url, logDirs, tokenFile string, rep contract.DeviceReport) error {
	rep.Seq = nextReportSeq()
	body, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("report devices to %s: %w", contract.RedactURL(url), err)
	}
	var keepErr error
	if dir, _, _ := strings.Cut(logDirs, ","); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, contract.ReportFile), append(body, '\n'), 0o644); err != nil {
			keepErr = fmt.Errorf("keep the device report for a later AM attempt: %w", err)
		}
	}
	if err := signAndSend(ctx, post, url, tokenFile, body); err != nil {
		return errors.Join(err, keepErr)
	}
	return keepErr
}

// postCommandStarted tells the AM when the worker command started (for its
// timeline): a report of only the container and that time, not kept.
func postCommandStarted(ctx context.Context, post PostFunc, url, container, tokenFile string, at time.Time) error {
	body, err := json.Marshal(contract.DeviceReport{Container: container, Seq: nextReportSeq(), CommandStarted: at})
	if err != nil {
		return fmt.Errorf("report devices to %s: %w", contract.RedactURL(url), err)
	}
	return signAndSend(ctx, post, url, tokenFile, body)
}

// signAndSend signs body with the container's key of tokenFile's
// credentials and POSTs it to url.
func signAndSend(ctx context.Context, post PostFunc, url, tokenFile string, body []byte) error {
	key, keyErr := containerKey(tokenFile)
	sig := ""
	if key != nil {
		sig = contract.SignReport(key, body)
	}
	if err := sendReport(ctx, post, url, sig, body); err != nil {
		return errors.Join(err, keyErr)
	}
	return nil
}

// lastReportSeq is the Seq of the last report this process signed.
var lastReportSeq atomic.Uint64

// nextReportSeq is a report's Seq: above every one this process used, and
// at least the clock's nanoseconds (so a second launcher process of the
// same container, should one ever run, goes on from the first's).
func nextReportSeq() uint64 {
	for {
		last := lastReportSeq.Load()
		next := max(last+1, uint64(time.Now().UnixNano()))
		if lastReportSeq.CompareAndSwap(last, next) {
			return next
		}
	}
}

// containerKey reads the container's key (contract.ContainerKeyAlias)
// from the credentials file at path; nil (and an error saying why) when
// there is none.
func containerKey(path string) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("no container key: %s is not set, so the report goes unsigned", EnvTokenFile)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("no container key: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile))
	if err != nil {
		return nil, fmt.Errorf("no container key: read %s: %w", path, err)
	}
	key, err := contract.ContainerKeyOf(b)
	if err != nil {
		return nil, fmt.Errorf("no container key: %s (%s): %w", path, EnvTokenFile, err)
	}
	if len(key) == 0 {
		return nil, fmt.Errorf("no container key: %s (%s) holds no secret key %s, so the report goes unsigned", path, EnvTokenFile, contract.ContainerKeyAlias)
	}
	return key, nil
}

// sendReport POSTs one report body to url with signature sig ("" for none).
func sendReport(ctx context.Context, post PostFunc, url, sig string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	var header map[string]string
	if sig != "" {
		header = map[string]string{contract.HeaderReportSignature: sig}
	}
	code, status, msg, err := post(ctx, url, "application/json", header, body)
	if err != nil {
		return fmt.Errorf("report devices to %s: %w", contract.RedactURL(url), err)
	}
	if !contract.ReportAccepted(code) {
		return fmt.Errorf("report devices to %s: %s: %s", contract.RedactURL(url), status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// PostFunc sends one HTTP POST of body to url, with the extra header
// fields in header (may be nil), and returns the response's status code,
// its status ("404 Not Found") and the first bytes of its body (up to
// 512). It follows no redirects.
type PostFunc func(ctx context.Context, url, contentType string, header map[string]string, body []byte) (code int, status string, msg []byte, err error)

// postHTTP is the launcher's own PostFunc: one HTTP/1.1 request on a
// fresh connection, plain http only (the AM's tracking server, whose URL
// the AM itself puts in XRES_AM_REPORT_URL, is http), connecting directly
// (no HTTP_PROXY: the AM runs on a NodeManager host of the same cluster).
// It stands in for net/http, whose package initialisation and size
// (crypto/tls, x509, http2) cost every launcher start about a millisecond.
//
//	POST <path> HTTP/1.1\r\n
//	Host: <host>\r\n
//	Content-Type: <type>\r\n
//	Content-Length: <n>\r\n
//	Connection: close\r\n
//	User-Agent: container-launcher\r\n
//	<each header field>: <value>\r\n   (sorted by name)
//	\r\n
//	<body>
func postHTTP(ctx context.Context, rawURL, contentType string, header map[string]string, body []byte) (int, string, []byte, error) {
	code, status, _, msg, err := exchange(ctx, "POST", rawURL, contentType, header, body, 512)
	return code, status, msg, err
}

// exchange is one HTTP/1.1 request on a fresh connection (plain http, no
// proxy), keeping up to limit bytes of the answer's body and its header
// fields (names in lower case): the launcher's POSTs and GETs. A body is
// sent with its type and length; extra header fields go in sorted order
// and may hold no line break. Errors never quote the URL (it may hold
// user information or a token: callers name it with contract.RedactURL).
func exchange(ctx context.Context, method, rawURL, contentType string, header map[string]string, body []byte, limit int64) (int, string, map[string]string, []byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, "", nil, nil, fmt.Errorf("bad URL: %w", err)
	}
	if u.Scheme != "http" {
		return 0, "", nil, nil, fmt.Errorf("unsupported scheme %q (the launcher talks to the AM over http)", u.Scheme)
	}
	if u.Host == "" {
		return 0, "", nil, nil, errors.New("no host in URL")
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	var req bytes.Buffer
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, u.RequestURI(), u.Host)
	if body != nil {
		fmt.Fprintf(&req, "Content-Type: %s\r\nContent-Length: %d\r\n", contentType, len(body))
	} else {
		req.WriteString("Accept: application/json\r\n")
	}
	req.WriteString("Connection: close\r\nUser-Agent: container-launcher\r\n")
	for _, k := range slices.Sorted(maps.Keys(header)) {
		if strings.ContainsAny(k+header[k], "\r\n") {
			return 0, "", nil, nil, fmt.Errorf("header field %q: line break in name or value", k)
		}
		fmt.Fprintf(&req, "%s: %s\r\n", k, header[k])
	}
	req.WriteString("\r\n")
	req.Write(body)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, "", nil, nil, err
	}
	defer conn.Close()
	// The context's end (its deadline too) interrupts the exchange.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write(req.Bytes()); err != nil {
		return 0, "", nil, nil, ctxErr(ctx, err)
	}
	code, status, fields, msg, err := readResponseN(bufio.NewReader(conn), limit)
	return code, status, fields, msg, ctxErr(ctx, err)
}

// ctxErr prefers the context's error to the I/O error it caused.
func ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

// readResponse reads an HTTP/1.x response: the status line, the headers
// and up to 512 bytes of the body (chunked or not).
func readResponse(r *bufio.Reader) (int, string, []byte, error) {
	code, status, _, msg, err := readResponseN(r, 512)
	return code, status, msg, err
}

// maxResponseFields bounds the header fields kept of an answer.
const maxResponseFields = 64

// readResponseN is readResponse keeping up to limit bytes of the body, and
// the header fields (the first maxResponseFields, names in lower case).
func readResponseN(r *bufio.Reader, limit int64) (int, string, map[string]string, []byte, error) {
	line, err := readLine(r)
	if err != nil {
		return 0, "", nil, nil, fmt.Errorf("read response: %w", err)
	}
	proto, status, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/1.") || len(status) < 3 {
		return 0, "", nil, nil, fmt.Errorf("malformed HTTP status line %q", line)
	}
	code, err := strconv.Atoi(status[:3])
	if err != nil || code < 100 || code > 999 {
		return 0, "", nil, nil, fmt.Errorf("malformed HTTP status line %q", line)
	}
	length, chunked := int64(-1), false
	fields := map[string]string{}
	for {
		h, err := readLine(r)
		if err != nil {
			return code, status, fields, nil, fmt.Errorf("read response headers: %w", err)
		}
		if h == "" {
			break
		}
		k, v, _ := strings.Cut(h, ":")
		v = strings.TrimSpace(v)
		name := strings.ToLower(strings.TrimSpace(k))
		if _, seen := fields[name]; !seen && len(fields) < maxResponseFields {
			fields[name] = v
		}
		switch name {
		case "content-length":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				length = n
			}
		case "transfer-encoding":
			chunked = strings.Contains(strings.ToLower(v), "chunked")
		}
	}
	var body io.Reader = io.LimitReader(r, limit)
	switch {
	case chunked:
		size, err := readLine(r)
		if err != nil {
			return code, status, fields, nil, nil // the status is what counts
		}
		size, _, _ = strings.Cut(size, ";")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		if err != nil || n < 0 {
			return code, status, fields, nil, nil
		}
		body = io.LimitReader(r, min(n, limit))
	case length >= 0:
		body = io.LimitReader(r, min(length, limit))
	}
	msg, _ := io.ReadAll(body)
	return code, status, fields, msg, nil
}

// readLine reads one CRLF- (or LF-) terminated line of at most 8 KiB.
func readLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		part, isPrefix, err := r.ReadLine()
		if err != nil {
			return "", err
		}
		b = append(b, part...)
		if len(b) > 8<<10 {
			return "", errors.New("header line too long")
		}
		if !isPrefix {
			return string(b), nil
		}
	}
}

// reportCommandStarted runs postCommandStarted beside the running worker;
// a failure only costs the AM's timeline its last mark, so it is logged at
// debug level.
func reportCommandStarted(ctx context.Context, env Env, url string, at time.Time, log logrus.FieldLogger) {
	if err := postCommandStarted(ctx, env.HTTP, url, env.Getenv(EnvContainerID), env.Getenv(EnvTokenFile), at); err != nil {
		log.WithError(err).Debug("could not tell the application master when the worker command started")
	}
}
