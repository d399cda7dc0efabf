package launchcmd

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOf(t *testing.T) {
	for args, want := range map[string]Command{
		"":                            Launch,
		"-- python train.py":          Launch,
		"--conf c.yaml -- true":       Launch,
		"true":                        Launch,
		"probe --json":                Probe,
		"check":                       Check,
		"discover --resources gpu --": Discover,
		"__exec-pinned 0 -- x":        PinExec,
		"help exit-codes":             Help,
		"-h":                          Usage,
		"--help":                      Usage,
		"-help":                       Usage,
		"--version":                   Version,
		"version":                     Version,
		"-version":                    Version,
		"--log-level debug probe":     Launch, // a flag first: a launch whose worker is "probe"
		"probes":                      Launch,
	} {
		var a []string
		if args != "" {
			a = strings.Fields(args)
		}
		require.Equal(t, want, Of(a), "%q", args)
	}
}

func TestArgs(t *testing.T) {
	require.Equal(t, []string{"--", "true"}, Args([]string{"./container-launcher", "--", "true"}))
	require.Equal(t, []string{"discover", "--resources", "gpu", "--", "--amount", "2"},
		Args([]string{"/opt/xres/xres-gpu-discovery.sh", "--amount", "2"}))
	require.Equal(t, Discover, Of(Args([]string{"xres-fpga-discovery"})))
	require.Equal(t, Launch, Of(Args([]string{"xres--discovery", "--", "x"})), "no resource: not a bridge name")
	require.Nil(t, Args(nil))
}
