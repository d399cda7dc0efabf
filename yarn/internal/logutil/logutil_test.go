package logutil

import (
	"bytes"
	"io"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

func TestOrDiscard(t *testing.T) {
	t.Run("injected logger is kept", func(t *testing.T) {
		var buf bytes.Buffer
		l := logrus.New()
		l.SetOutput(&buf)
		OrDiscard(l).Info("kept")
		require.Contains(t, buf.String(), "kept")
	})
	t.Run("nil gives a logger that writes nothing", func(t *testing.T) {
		l := OrDiscard(nil)
		require.NotNil(t, l)
		lg, ok := l.(*logrus.Logger)
		require.True(t, ok)
		require.Equal(t, io.Discard, lg.Out)
	})
}
