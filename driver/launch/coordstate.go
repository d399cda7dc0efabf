package launch

import (
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/coord"
	"github.com/xres/xres/resources"
)

// coordinationOf works out how spec's devices are coordinated on the host,
// as its driver reads its params: what its factory reports
// (driver.CoordinationReporter), else the host coordination every
// built-in driver and plugin shares (coord.CoordinationOf). Mode is ""
// when unknown (no driver, an unknown factory, or params the driver
// rejects).
func (l *Launcher) coordinationOf(spec resources.Spec) driver.Coordination {
	f, canonical, err := l.factory(spec)
	if err != nil {
		return driver.Coordination{}
	}
	return l.coordinationFor(spec, f, canonical)
}

// coordinationFor is coordinationOf for spec's factory f, already looked
// up under its primary name canonical.
func (l *Launcher) coordinationFor(spec resources.Spec, f driver.Factory, canonical string) driver.Coordination {
	if f == nil || canonical == "" {
		return driver.Coordination{}
	}
	var (
		c   driver.Coordination
		err error
	)
	if cr, ok := f.(driver.CoordinationReporter); ok {
		c, err = cr.Coordination(spec.Name, spec.Params, l.Getenv)
	} else {
		c, err = coord.CoordinationOf(spec.Name, spec.Params)
	}
	if err != nil {
		return driver.Coordination{}
	}
	return c
}
