package gpu

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The NodeManager's answers as Jetty and Go's server frame them: by
// length, by chunks (Jetty's JSON), by the connection's end; a 401 asking
// for SPNEGO; what is not HTTP (a TLS record: the port speaks HTTPS).
func TestReadNMResponse(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        string
		status    int
		negotiate bool
		body      string
		err       error
	}{
		{name: "length", in: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", status: 200, body: "{}"},
		{name: "chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n", status: 200, body: `{"a":1}`},
		{name: "until the end", in: "HTTP/1.0 404 Not Found\nServer: x\n\nno such resource", status: 404, body: "no such resource"},
		{name: "SPNEGO", in: "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Negotiate\r\nContent-Length: 0\r\n\r\n", status: 401, negotiate: true},
		{name: "basic only", in: "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Basic realm=x\r\nContent-Length: 0\r\n\r\n", status: 401},
		{name: "TLS record", in: "\x15\x03\x01\x00\x02\x02\x46", err: errNMNotHTTP},
		{name: "empty", in: "", err: errNMNotHTTP},
		{name: "no status", in: "HTTP/1.1 OK\r\n\r\n", err: errNMNotHTTP},
		{name: "bad length", in: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", err: errNMBody},
		{name: "too long", in: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", err: errNMBody},
		{name: "chunks too long", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + strings.Repeat("x", 64) + "\r\n0\r\n\r\n", err: errNMBody},
		{name: "bad chunk size", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", err: errNMBody},
		{name: "chunk without CRLF", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY", err: errNMBody},
		{name: "header without colon", in: "HTTP/1.1 200 OK\r\nbroken\r\n\r\n", err: errNMBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := readNMResponse(bufio.NewReader(strings.NewReader(tc.in)), 32)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.status)
			require.Equal(t, tc.negotiate, resp.negotiate)
			require.Equal(t, tc.body, string(resp.body))
		})
	}
}

func FuzzReadNMResponse(f *testing.F) {
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	f.Add("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
	f.Add("HTTP/1.1 401 x\r\nWWW-Authenticate: Negotiate\r\n\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		resp, err := readNMResponse(bufio.NewReader(strings.NewReader(in)), 64)
		if err == nil && (resp.status < 100 || len(resp.body) > 64) {
			t.Fatalf("status %d, %d bytes of body", resp.status, len(resp.body))
		}
	})
}
