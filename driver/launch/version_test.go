package launch

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersionPrintsWhatCmdGives(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		t.Run(arg, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), []string{arg}, Env{Stdout: &out, Stderr: &errb, Version: func() string { return "container-launcher v1\n" }})
			require.Equal(t, ExitOK, code, errb.String())
			require.Equal(t, "container-launcher v1\n", out.String())
		})
	}
}
