// Command xres-spnego makes the SPNEGO (Kerberos) token container-launcher
// presents to a NodeManager's REST that asks for one (401 Negotiate). It
// is shipped beside the launcher, which runs it only then: Kerberos stays
// out of the launcher's own start. See driver/gpu/nmspnego for its
// arguments and exit codes.
package main

import (
	"os"

	"github.com/xres/xres/driver/gpu/nmspnego"
)

func main() { os.Exit(nmspnego.Main(os.Args[1:], os.Stdout, os.Stderr, os.Getenv)) }
