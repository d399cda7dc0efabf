//go:build integration

package integration

// The AM's tracking page as a person sees it: opened through the RM's web proxy in a real
// headless browser (Debian's chromium, installed by .ci/run), it lists the workers with their
// hosts and devices, draws each worker's start (one bar per worker, its phases, a link to its
// logs on its NodeManager) and refreshes itself. A screenshot is kept for people to look at.
//
// XRES_PAGE_WORKERS=N runs it with N workers (default 2; the README's 64-worker screenshot:
// N=64 on a cluster sized as make bench-am-curve sizes it), XRES_PAGE_SCREENSHOT=FILE keeps
// the screenshot there (default: a temp folder, logged).

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/integration/harness"
	"github.com/xres/xres/yarn/amstatus"
)

// chromium returns the headless browser's path; its absence is a failure (CI installs it).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: the tracking-page test needs a headless browser (Debian: apt-get install -y chromium; .ci/run installs it)")
	return ""
}

// headless runs chromium headless on url with extra flags and returns its stdout.
func headless(t *testing.T, browser, url string, flags ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir=" + t.TempDir()}, flags...)
	cmd := exec.CommandContext(ctx, browser, append(args, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "chromium %s: %s", strings.Join(flags, " "), tailString(stderr.String(), 20))
	return stdout.String()
}

var refreshesRE = regexp.MustCompile(`id="refreshed" data-refreshes="(\d+)">([^<]*)<`)

// pageWorkers is XRES_PAGE_WORKERS, default 2.
func pageWorkers(t *testing.T) int {
	v := os.Getenv("XRES_PAGE_WORKERS")
	if v == "" {
		return 2
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "XRES_PAGE_WORKERS=%q: want a count", v)
	require.Positive(t, n, "XRES_PAGE_WORKERS")
	return n
}

// pageWorker waits for the release file, polling once a second (64 of them share two cores).
func pageWorker(release string) []string {
	return []string{"sh", "-c", `echo "xres-it worker container=$CONTAINER_ID gpu=$CUDA_VISIBLE_DEVICES"; ` +
		`while [ ! -e ` + release + ` ]; do sleep 1; done`}
}

var (
	workerBarRE = regexp.MustCompile(`<g class="worker[^"]*" data-container="([^"]+)"`)
	logLinkRE   = regexp.MustCompile(`<a href="([^"]+)" target="_blank"><text class="label"[^>]*>([^<]+)</text></a>`)
)

func TestTrackingPageInBrowser(t *testing.T) {
	c := harness.Get(t)
	browser := chromium(t)
	dir := t.TempDir()
	workers := pageWorkers(t)
	cfg := writeAMConf(t, dir, max(workers, 4))
	release := filepath.Join(dir, "release")

	ctx, cancel := context.WithTimeout(context.Background(), amWaitTimeout)
	defer cancel()
	p := startAM(t, ctx, append([]string{"submit", "--conf", cfg, "--workers", strconv.Itoa(workers), "--name", "xres-it-tracking-page", "--"},
		pageWorker(release)...)...)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	waitWorkersWithGPUs(t, ctx, c, app, workers)
	// Every worker's start drawn to its end: its launcher reports the command started just after
	// its devices.
	var st amstatus.Status
	eventually(t, time.Minute, "every worker's timeline complete", func() (bool, string) {
		var err error
		if st, err = amStatusOf(ctx, c, app); err != nil {
			return false, err.Error()
		}
		for _, w := range st.Containers {
			if w.Timeline == nil || w.Timeline.CommandStarted.IsZero() {
				return false, fmt.Sprintf("%s: %+v", w.Container, w.Timeline)
			}
		}
		return len(st.Containers) == workers, fmt.Sprintf("%d containers", len(st.Containers))
	})

	page := strings.TrimRight(c.RMWebURL, "/") + "/proxy/" + url.PathEscape(app) + "/"
	// 16 s of the page's own (virtual) time: its 5 s refresh fetches the page three times.
	dom := headless(t, browser, page, "--virtual-time-budget=16000", "--dump-dom")
	require.Contains(t, dom, "xres application "+app, dom)
	for _, w := range st.Containers {
		require.Contains(t, dom, w.Container, "the page lists worker %s", w.Container)
		require.Contains(t, dom, "<td>"+w.Host+"</td>", "the page shows worker %s's host", w.Container)
		require.Contains(t, dom, "gpu: "+w.Devices["gpu"][0]["index"], "the page shows worker %s's GPU", w.Container)
	}
	m := refreshesRE.FindStringSubmatch(dom)
	require.NotNil(t, m, "the page never refreshed itself (no data-refreshes): %s", dom)
	n, _ := strconv.Atoi(m[1])
	require.GreaterOrEqual(t, n, 2, "refreshes within 16 s of page time")
	require.True(t, strings.HasPrefix(m[2], "updated "), "the last refresh failed: %q", m[2])

	// The timeline, as the browser holds it after its refreshes: one bar per worker, in the
	// page's order, each with its six phases, its label linked to its logs on its NodeManager.
	require.Contains(t, dom, `<svg id="timeline-svg"`, "no timeline drawing in the page")
	bars := workerBarRE.FindAllStringSubmatch(dom, -1)
	require.Len(t, bars, workers, "one bar per worker")
	chunks := strings.Split(dom[strings.Index(dom, `<g class="worker`):], `<g class="worker`)[1:]
	links := logLinkRE.FindAllStringSubmatch(dom, -1)
	require.Len(t, links, workers, "a log link per worker")
	for i, w := range st.Containers {
		require.Equal(t, w.Container, html.UnescapeString(bars[i][1]), "bar %d", i)
		for k := range 6 {
			require.Contains(t, chunks[i], fmt.Sprintf(`class="phase-%d"`, k), "worker %s's phase %d", w.Container, k)
		}
		want := "http://" + w.NodeHTTP + "/node/containerlogs/" + w.Container + "/" + c.User
		require.Equal(t, want, html.UnescapeString(links[i][1]), "worker %s's log link", w.Container)
		require.Equal(t, w.Container, links[i][2])
	}
	// The link resolves: the NodeManager answers with the container's log page (its files).
	first := st.Containers[0]
	logs := nmGet(t, ctx, html.UnescapeString(links[0][1]))
	require.Contains(t, logs, "/node/containerlogs/"+first.Container+"/"+c.User+"/stdout",
		"the NodeManager's log page links the container's stdout: %s", tailString(logs, 40))

	// A screenshot for people, kept after the test (t.TempDir would be removed), tall enough for
	// every bar of the drawing.
	shot := os.Getenv("XRES_PAGE_SCREENSHOT")
	if shot == "" {
		shots, err := os.MkdirTemp("", "xres-tracking-page-")
		require.NoError(t, err)
		shot = filepath.Join(shots, app+".png")
	}
	size := fmt.Sprintf("--window-size=1120,%d", 330+11*workers)
	headless(t, browser, page, size, "--hide-scrollbars", "--virtual-time-budget=2000", "--screenshot="+shot)
	b, err := os.ReadFile(shot)
	require.NoError(t, err, "chromium wrote no screenshot")
	require.True(t, bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")), "screenshot is not a PNG")
	t.Logf("tracking page screenshot: %s (%d bytes)", shot, len(b))
}

// nmGet fetches a NodeManager web page and returns its body; not 200 is a failure.
func nmGet(t *testing.T, ctx context.Context, link string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "GET %s", link)
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	require.NoError(t, err, "GET %s", link)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", link, tailString(string(body), 20))
	return string(body)
}
