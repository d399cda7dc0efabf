// Package logutil holds the logging helper the yarn packages share: the
// logger to use when the caller injected none.
package logutil

import (
	"io"

	"github.com/sirupsen/logrus"
)

// OrDiscard returns log, or a logger that drops everything when log is nil.
func OrDiscard(log logrus.FieldLogger) logrus.FieldLogger {
	if log != nil {
		return log
	}
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}
