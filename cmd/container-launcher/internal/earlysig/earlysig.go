// Package earlysig begins a launch's signal subscription while the
// launcher's packages are still being initialised. Subscribing costs the
// Go runtime one hand-over to its signal thread per signal (0.3-0.4 ms for
// the four a launch forwards), and a launch reserves nothing before it is
// complete: begun in main, it was the longest part of getting ready.
// This package is imported by the command alone and initialised among the
// first (it needs only os/signal), so the subscription runs beside the
// initialisation of the others.
//
// Only a launch subscribes (launchcmd.Of): probe, check and the other
// subcommands hold nothing, and a signal ends them at once.
package earlysig

import (
	"os"
	"os/signal"

	"github.com/xres/xres/driver/launch/launchcmd"
)

// C receives the forwarded signals once subscribed.
var C = make(chan os.Signal, 8)

// done is closed once subscribed; nil until the subscription begins (at
// initialisation, for a launch).
var done chan struct{}

func init() {
	if launchcmd.Of(launchcmd.Args(os.Args)) == launchcmd.Launch {
		begin()
	}
}

func begin() {
	done = make(chan struct{})
	go func() {
		defer close(done)
		signal.Notify(C, launchcmd.ForwardedSignals...)
	}()
}

// Notify is launch.Env.Notify: it begins the subscription unless the
// initialisation did, and returns what waits for it to be complete.
func Notify() (wait func()) {
	if done == nil {
		begin()
	}
	d := done
	return func() { <-d }
}
