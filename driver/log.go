package driver

import (
	"io"

	"github.com/sirupsen/logrus"
)

// discardLogger is the logger used when none is injected.
func discardLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// LoggerOrDiscard returns log, or a logger that drops everything when log is
// nil.
func LoggerOrDiscard(log logrus.FieldLogger) logrus.FieldLogger {
	if log == nil {
		return discardLogger()
	}
	return log
}
