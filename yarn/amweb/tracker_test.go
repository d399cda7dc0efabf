package amweb

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn/amplan"
	"github.com/xres/xres/yarn/amstatus"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func TestListenPorts(t *testing.T) {
	tests := []struct {
		spec string
		want []int
		err  bool
	}{
		{spec: "", want: []int{0}},
		{spec: "0", want: []int{0}},
		{spec: "8081", want: []int{8081}},
		{spec: "50100-50102", want: []int{50100, 50101, 50102}},
		{spec: "1, 5-6", want: []int{1, 5, 6}},
		{spec: "x", err: true},
		{spec: "9-3", err: true},
		{spec: "70000", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := parsePorts(tt.spec)
			if tt.err {
				require.ErrorContains(t, err, "rest.bind-port")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	l, err := Listen(context.Background(), "127.0.0.1", "0")
	require.NoError(t, err)
	defer l.Close()
	// The port taken: a range holding only it fails with a clear error.
	port := l.Addr().(*net.TCPAddr).Port
	_, err = Listen(context.Background(), "127.0.0.1", strconv.Itoa(port))
	require.ErrorContains(t, err, "bind tracking server on 127.0.0.1 port "+strconv.Itoa(port))
}

func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"", "0", "8081", "50100-50200", "1,5-6", "x", "9-3", "70000", "1-65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ports, err := parsePorts(s)
		if err != nil {
			require.ErrorIs(t, err, amplan.ErrBadConfig)
			return
		}
		require.NotEmpty(t, ports)
		for _, p := range ports {
			require.True(t, p >= 0 && p <= 65535)
		}
	})
}

// staticSource is a StatusSource without StatusPage: the tracker pages its
// whole Status.
type staticSource struct{ st amstatus.Status }

func (s staticSource) Status() amstatus.Status                   { return s.st }
func (s staticSource) ReportDevices(contract.DeviceReport) error { return nil }

// A thousand unsigned requests make one log line; the next line, once the
// interval has passed, counts those not logged.
func TestRefusalsLoggedAtMostOncePerInterval(t *testing.T) {
	a := staticSource{}
	var mu sync.Mutex
	now := time.Unix(1700000000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	logger, hook := logtest.NewNullLogger()
	srv := httptest.NewServer(NewTracker(a, logger, WithReportSecret(testSecret), withClock(clock)))
	defer srv.Close()
	body := []byte(`{"container":"container_1_0001_01_000003","seq":1}`)
	for range 1000 {
		require.Equal(t, http.StatusUnauthorized, postRaw(t, srv.URL, body, ""))
	}
	warns := func() []*logrus.Entry {
		var out []*logrus.Entry
		for _, e := range hook.AllEntries() {
			if e.Level == logrus.WarnLevel {
				out = append(out, e)
			}
		}
		return out
	}
	require.Len(t, warns(), 1)
	mu.Lock()
	now = now.Add(refusalLogEvery)
	mu.Unlock()
	require.Equal(t, http.StatusForbidden, postRaw(t, srv.URL, body, "hmac-sha256=00"))
	w := warns()
	require.Len(t, w, 2)
	require.Equal(t, 999, w[1].Data["refused_not_logged"])
}

// The tracking server holds no connection for a client that trickles its
// request or sits idle: the read and idle timeouts close it.
func TestServerBoundsSlowClients(t *testing.T) {
	saved := serverLimits
	defer func() { serverLimits = saved }()
	serverLimits.ReadHeaderTimeout, serverLimits.ReadTimeout, serverLimits.IdleTimeout = 200*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	require.Positive(t, saved.ReadTimeout)
	require.Positive(t, saved.IdleTimeout)
	require.Positive(t, saved.WriteTimeout)

	a := staticSource{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, l, NewTracker(a, nil, WithReportSecret(testSecret))) }()
	defer func() { cancel(); <-served }()

	// closed reads conn until the server closes it; the guard is far
	// beyond the timeouts (a hang, not a budget).
	closed := func(conn net.Conn) error {
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Minute)))
		_, err := io.Copy(io.Discard, conn)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return err
		}
		return nil
	}
	t.Run("trickled body", func(t *testing.T) {
		conn, err := net.Dial("tcp", l.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "POST "+PathReport+" HTTP/1.1\r\nHost: am\r\nContent-Length: 1000\r\n\r\n{")
		require.NoError(t, err)
		require.NoError(t, closed(conn), "the server still held the connection")
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		conn, err := net.Dial("tcp", l.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		_, err = io.WriteString(conn, "GET "+PathWorkers+" HTTP/1.1\r\nHost: am\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, closed(conn), "the server still held the idle connection")
	})
}

func postRaw(t *testing.T, base string, body []byte, sig string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+PathReport, bytes.NewReader(body))
	require.NoError(t, err)
	if sig != "" {
		req.Header.Set(contract.HeaderReportSignature, sig)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}
