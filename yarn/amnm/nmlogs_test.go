package amnm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
)

func TestNMWebLogs(t *testing.T) {
	var gotPath, gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotQuery = r.URL.Path, r.URL.RawQuery
		if strings.Contains(r.URL.Path, "missing") {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte("starting\n\nTraceback:\r\n  File x\nValueError: bad\n"))
	}))
	defer srv.Close()
	c := yarn.Container{ID: "container_1_0001_01_000002", NodeHTTP: strings.TrimPrefix(srv.URL, "http://")}
	logs := NMWebLogs{Client: srv.Client(), User: "alice"}

	lines, err := logs.Tail(context.Background(), c, "stderr", 3)
	require.NoError(t, err)
	require.Equal(t, []string{"Traceback:", "  File x", "ValueError: bad"}, lines)
	require.Equal(t, "/ws/v1/node/containerlogs/container_1_0001_01_000002/stderr", gotPath)
	require.Contains(t, gotQuery, "size=-65536")
	require.Contains(t, gotQuery, "user.name=alice")

	c.ID = "container_missing"
	_, err = logs.Tail(context.Background(), c, "stderr", 3)
	require.ErrorContains(t, err, "404 Not Found")

	_, err = logs.Tail(context.Background(), yarn.Container{ID: "x"}, "stderr", 3)
	require.ErrorContains(t, err, "no NodeManager web address")
}

func TestLogContents(t *testing.T) {
	framed := "Container: container_1 on localhost:43487\nLogAggregationType: LOCAL\n====\nLogType:stderr\nLogLength:22\nLogContents:\nline one\nline two\nEnd of LogType:stderr.\n*****\n"
	require.Equal(t, []string{"line one", "line two"}, lastLines(logContents([]byte(framed)), 5))
	require.Equal(t, []string{"plain"}, lastLines(logContents([]byte("plain\n")), 5))
}

func FuzzLogContents(f *testing.F) {
	for _, s := range []string{"", "plain\n", "LogContents:\nx\nEnd of LogType:stderr.\n", "LogContents:\n", "a\r\nb\n\n\nc"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1000 {
			return
		}
		lines := lastLines(logContents([]byte(s)), n)
		require.LessOrEqual(t, len(lines), n)
		for _, l := range lines {
			require.NotEmpty(t, strings.TrimSpace(l))
		}
	})
}
