package amnm

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/xres/xres/yarn"
)

// maxLogBytes bounds what is read of a container log.
const maxLogBytes = 64 << 10

// NMWebLogs reads container logs from the NodeManager web service,
// GET http://<node http address>/ws/v1/node/containerlogs/<container>/<file>,
// asking for the tail only (size=-N) and keeping the last lines.
type NMWebLogs struct {
	Client *http.Client // nil: http.DefaultClient
	User   string       // user.name for simple HTTP authentication; "" for none
	Scheme string       // "http" (default) or "https"
}

var _ LogFetcher = NMWebLogs{}

// Tail implements LogFetcher.
func (n NMWebLogs) Tail(ctx context.Context, c yarn.Container, file string, lines int) ([]string, error) {
	if c.NodeHTTP == "" {
		return nil, fmt.Errorf("fetch %s of %s: container has no NodeManager web address", file, c.ID)
	}
	scheme := n.Scheme
	if scheme == "" {
		scheme = "http"
	}
	q := url.Values{"size": {fmt.Sprint(-maxLogBytes)}}
	if n.User != "" {
		q.Set("user.name", n.User)
	}
	u := fmt.Sprintf("%s://%s/ws/v1/node/containerlogs/%s/%s?%s", scheme, c.NodeHTTP,
		url.PathEscape(c.ID), url.PathEscape(file), q.Encode())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s of %s: %w", file, c.ID, err)
	}
	req.Header.Set("Accept", "text/plain")
	client := n.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s of %s from %s: %w", file, c.ID, c.NodeHTTP, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4*maxLogBytes))
	if err != nil {
		return nil, fmt.Errorf("fetch %s of %s from %s: %w", file, c.ID, c.NodeHTTP, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch %s of %s from %s: %s", file, c.ID, c.NodeHTTP, resp.Status)
	}
	return lastLines(logContents(body), lines), nil
}

// logContents strips the NodeManager's framing (Container:, LogType:, …,
// LogContents:, End of LogType:, a line of stars) around a log file's text
// when the response has it.
func logContents(b []byte) []byte {
	const start, end = "LogContents:\n", "\nEnd of LogType:"
	i := bytes.Index(b, []byte(start))
	if i < 0 {
		return b
	}
	b = b[i+len(start):]
	if j := bytes.LastIndex(b, []byte(end)); j >= 0 {
		b = b[:j]
	}
	return b
}

// lastLines returns up to n last non-empty lines of b.
func lastLines(b []byte, n int) []string {
	var all []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 4*maxLogBytes)
	for sc.Scan() {
		if line := strings.TrimRight(sc.Text(), "\r"); strings.TrimSpace(line) != "" {
			all = append(all, line)
		}
	}
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return all
}
