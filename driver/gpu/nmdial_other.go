//go:build !linux

package gpu

import (
	"context"
	"io"
	"net"
	"time"
)

// dialNM connects to a NodeManager (net's dialer where the launcher's
// blocking one, nmdial_linux.go, is not built).
func dialNM(ctx context.Context, host, port string) (io.ReadWriteCloser, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	return conn, nil
}
