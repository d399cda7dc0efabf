package driver

import "strings"

// EnvToken upper-cases s and replaces every character other than A-Z and
// 0-9 with "_", making it usable inside an environment variable name:
// "pci.bus-id" gives PCI_BUS_ID.
func EnvToken(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}
