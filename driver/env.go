package driver

import "github.com/xres/xres/resources"

// EnvToken upper-cases s and replaces every character other than A-Z and
// 0-9 with "_", making it usable inside an environment variable name:
// "pci.bus-id" gives PCI_BUS_ID. It is resources.EnvToken, which the
// configuration check uses to refuse names whose variables would collide.
func EnvToken(s string) string { return resources.EnvToken(s) }
