// Command xres-nmrest asks a NodeManager's REST for container-launcher where
// that needs HTTPS or SPNEGO (Kerberos), which the launcher does not link. It
// is shipped beside the launcher, which runs it only then: TLS and Kerberos
// stay out of the launcher's own start. See driver/gpu/nmhelper for its
// arguments and exit codes.
package main

import (
	"os"

	"github.com/xres/xres/driver/gpu/nmhelper"
)

func main() { os.Exit(nmhelper.Main(os.Args[1:], os.Stdout, os.Stderr, os.Getenv)) }
