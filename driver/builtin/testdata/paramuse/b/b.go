package b

import (
	"example.com/a"

	"github.com/xres/xres/driver"
)

func use(opts driver.Options, params map[string]string) string {
	params["copy"] = "ok" // writing is not reading
	return a.Exported.Get(opts.Params) + params["key"]
}
