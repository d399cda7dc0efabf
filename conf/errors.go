package conf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalid marks every configuration problem xres refuses, whichever
// reader found it (a typed value, a list, the worker groups, the external
// resources, the AM's settings, the launcher's configuration, a Hadoop
// value): errors.Is(err, ErrInvalid). The error itself is an *Error naming
// the key and where its value came from.
var ErrInvalid = errors.New("invalid configuration")

// Error is a configuration problem: what is wrong (Err) with Key, and
// where its value came from: File and Line when it came from a file,
// Origin otherwise ("-D", "set", "default", Spark's "--conf"). Its message
// is "config key K (file:line): what"; without a key "file:line: what".
// Values of sensitive keys never appear in it (ValueError redacts them).
type Error struct {
	Key    string
	File   string
	Line   int
	Origin string // where the value came from when not from a file
	Err    error
	hadoop bool // a Hadoop XML key: "hadoop configuration key K (file)"
}

// KeyError returns an *Error about key of c, with its file and line.
func (c *Config) KeyError(key string, err error) *Error {
	return ErrorAt(key, c.Origin(key), err)
}

// KeyErrorf is KeyError with a formatted message.
func (c *Config) KeyErrorf(key, format string, args ...any) *Error {
	return c.KeyError(key, fmt.Errorf(format, args...))
}

// ErrorAt returns an *Error about key whose value came from origin, an
// origin as Config.Origin gives it ("file:line", "-D", …).
func ErrorAt(key, origin string, err error) *Error {
	e := &Error{Key: key, Origin: origin, Err: err}
	if i := strings.LastIndexByte(origin, ':'); i > 0 {
		if n, perr := strconv.Atoi(origin[i+1:]); perr == nil && n > 0 {
			e.File, e.Line, e.Origin = origin[:i], n, ""
		}
	}
	return e
}

// Where is "file:line", "file", or the origin.
func (e *Error) Where() string {
	switch {
	case e.File != "" && e.Line > 0:
		return e.File + ":" + strconv.Itoa(e.Line)
	case e.File != "":
		return e.File
	}
	return e.Origin
}

// Error renders "config key K (where): what", or "where: what" without a
// key.
func (e *Error) Error() string {
	what := "<nil>"
	if e.Err != nil {
		what = e.Err.Error()
	}
	where := e.Where()
	switch {
	case e.Key == "" && where == "":
		return what
	case e.Key == "":
		return where + ": " + what
	}
	label := "config key"
	if e.hadoop {
		label = "hadoop configuration key"
	}
	if where == "" {
		return label + " " + e.Key + ": " + what
	}
	return label + " " + e.Key + " (" + where + "): " + what
}

// Unwrap returns what is wrong.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }
