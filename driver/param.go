package driver

import (
	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources/params"
)

// Param declares one driver param (external-resource.<name>.param.<Name>):
// its type, default and documentation (params.Param, which `am` reads
// without the drivers). Every param a driver reads is a Param made by
// Declare and read through its methods, never by indexing Options.Params;
// the configuration reference (conf.Options, docs/configuration.md's table) is
// generated from the same declarations, and driver/builtin's tests fail on
// a key read without a declaration or declared and never read.
type Param = params.Param

// Declare registers p in conf's option registry, as
// external-resource.<name>.param.<p.Name>, and returns it, for use as
// `var sourceParam = driver.Declare(driver.Param{...})`. A name declared
// twice is reported by conf.CheckOptions.
func Declare(p Param) Param {
	conf.Register(p.Option())
	return p
}
