//go:build integration

package integration

// The AM's tracking page as a person sees it: opened through the RM's web proxy in a real
// headless browser (Debian's chromium, installed by .ci/run), it lists the workers with their
// hosts and devices and refreshes itself. A screenshot is kept for people to look at.

import (
	"bytes"
	"context"
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

func TestTrackingPageInBrowser(t *testing.T) {
	c := harness.Get(t)
	browser := chromium(t)
	dir := t.TempDir()
	cfg := writeAMConf(t, dir, 4)
	release := filepath.Join(dir, "release")
	const workers = 2

	ctx, cancel := context.WithTimeout(context.Background(), amWaitTimeout)
	defer cancel()
	p := startAM(t, ctx, append([]string{"submit", "--conf", cfg, "--workers", strconv.Itoa(workers), "--name", "xres-it-tracking-page", "--"},
		waitWorker(release)...)...)
	app := p.appID(t)
	c.KeepAppLogs(t, app)
	killOnCleanup(t, c, app, release)

	st := waitWorkersWithGPUs(t, ctx, c, app, workers)

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

	// A screenshot for people, kept after the test (t.TempDir would be removed).
	shots, err := os.MkdirTemp("", "xres-tracking-page-")
	require.NoError(t, err)
	shot := filepath.Join(shots, app+".png")
	headless(t, browser, page, "--window-size=1280,720", "--virtual-time-budget=2000", "--screenshot="+shot)
	b, err := os.ReadFile(shot)
	require.NoError(t, err, "chromium wrote no screenshot")
	require.True(t, bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")), "screenshot is not a PNG")
	t.Logf("tracking page screenshot: %s (%d bytes)", shot, len(b))
}
