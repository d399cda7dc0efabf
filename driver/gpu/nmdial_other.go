//go:build !linux

package gpu

import (
	"context"
	"net"
)

// dialNM connects to the NodeManager (nmdial_linux.go: with plain system
// calls).
func dialNM(ctx context.Context, host, port string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
}
