package main

import (
	"context"
	"flag"
	"fmt"
	"regexp"
)

// cmdSubmit: am submit [--conf FILE] [-D k=v]… [--name] [--queue] [--workers N]
// [--files …] [--detach] -- <worker command…>
func cmdSubmit(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	var c common
	c.register(fs, true)
	var files listFlag
	fs.String("name", "", "application name (default: yarn.application.name, else xres)")
	fs.String("queue", "", "YARN queue (default: yarn.application.queue, else default)")
	fs.Int("workers", 0, "number of workers (default: from parallelism.default)")
	fs.Var(&files, "files", "files to ship, PATH or PATH#NAME, comma-separated (repeatable)")
	fs.Bool("detach", false, "return after submission instead of following the application")
	pos, worker, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected argument %q (the worker command goes after --)", errUsage, pos[0])
	}
	if len(worker) == 0 {
		return fmt.Errorf("%w: no worker command (am submit [flags] -- <worker command…>)", errUsage)
	}
	if err := c.apply(e); err != nil {
		return err
	}
	if _, err := c.load(e); err != nil {
		return err
	}
	return fmt.Errorf("submit: %w: the ApplicationClientProtocol client is not wired to am yet", errNotImplemented)
}

// cmdStatus: am status APP_ID [--json]
func cmdStatus(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	var c common
	c.register(fs, false)
	fs.Bool("json", false, "print JSON")
	if _, err := appID(fs, args); err != nil {
		return err
	}
	return fmt.Errorf("status: %w: the YARN client is not wired to am yet", errNotImplemented)
}

// cmdKill: am kill APP_ID
func cmdKill(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("kill", flag.ContinueOnError)
	var c common
	c.register(fs, false)
	if _, err := appID(fs, args); err != nil {
		return err
	}
	return fmt.Errorf("kill: %w: the YARN client is not wired to am yet", errNotImplemented)
}

// cmdCluster: am cluster [--json]
func cmdCluster(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	var c common
	c.register(fs, false)
	fs.Bool("json", false, "print JSON")
	pos, rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos)+len(rest) > 0 {
		return fmt.Errorf("%w: unexpected argument", errUsage)
	}
	return fmt.Errorf("cluster: %w: the YARN client is not wired to am yet", errNotImplemented)
}

func appID(fs *flag.FlagSet, args []string) (string, error) {
	pos, rest, err := parse(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 || len(rest) > 0 {
		return "", fmt.Errorf("%w: want exactly one application id", errUsage)
	}
	if !validAppID(pos[0]) {
		return "", fmt.Errorf("%w: %q is not an application id (application_<cluster timestamp>_<number>)", errUsage, pos[0])
	}
	return pos[0], nil
}

var appIDPattern = regexp.MustCompile(`^application_[0-9]+_[0-9]+$`)

// validAppID checks the application_<cluster timestamp>_<number> form.
func validAppID(s string) bool { return appIDPattern.MatchString(s) }
