package driver

import "context"

// The launcher must not hold devices before it can be told to let them go:
// its signal subscription is complete before anything is reserved. That
// subscription is the slowest part of its start, so the launcher hands it
// to Discover through the context, and Coordinated (every built-in driver
// and plugin) waits for it just before it reserves, after it has listed the
// host's devices and chosen among them (coord.Host later still: under its
// lock, just before it writes the reservation). A driver that does not say it
// calls the hook (ReserveGated) is waited for before its Discover.

type beforeReserveKey struct{}

// WithBeforeReserve returns ctx carrying fn, which a ReserveGated driver's
// Discover calls before it reserves anything (nil fn: ctx itself).
func WithBeforeReserve(ctx context.Context, fn func()) context.Context {
	if fn == nil {
		return ctx
	}
	return context.WithValue(ctx, beforeReserveKey{}, fn)
}

// BeforeReserve calls the function WithBeforeReserve put in ctx, if any.
// A driver that reserves calls it first.
func BeforeReserve(ctx context.Context) {
	if fn, ok := ctx.Value(beforeReserveKey{}).(func()); ok {
		fn()
	}
}

// ReserveGated is a Driver whose Discover calls BeforeReserve before it
// reserves anything.
type ReserveGated interface {
	GatesReservation()
}

// WriteGated is a Reserver that calls BeforeReserve itself, under its
// lock just before it records the reservation (coord.Host): Coordinated
// then leaves the wait to it, which hides more of it.
type WriteGated interface {
	GatesWrite()
}

// GatesReservation implements ReserveGated.
func (c *Coordinated) GatesReservation() {}

// CallsBeforeReserve reports whether d's Discover calls BeforeReserve
// before reserving.
func CallsBeforeReserve(d Driver) bool {
	_, ok := d.(ReserveGated)
	return ok
}
