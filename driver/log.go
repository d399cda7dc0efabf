package driver

import (
	"io"

	"github.com/sirupsen/logrus"
)

// LoggerOrDiscard returns log, or a logger that drops everything when log is
// nil.
func LoggerOrDiscard(log logrus.FieldLogger) logrus.FieldLogger {
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		return l
	}
	return log
}
