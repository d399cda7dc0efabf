package contract

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReportAccepted(t *testing.T) {
	for code, want := range map[int]bool{200: true, 202: true, 204: true, 299: true, 199: false, 302: false, 400: false, 500: false} {
		require.Equal(t, want, ReportAccepted(code), code)
	}
}
