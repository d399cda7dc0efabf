package a

import "github.com/xres/xres/driver"

var (
	readParam   = driver.Declare(driver.Param{Name: "read", Doc: "read below"})
	unreadParam = driver.Declare(driver.Param{Name: "unread", Doc: "never read"})
	// Exported is read from package b only.
	Exported = driver.Declare(driver.Param{Name: "exported", Doc: "read by b"})
)

var loose = driver.Param{Name: "loose", Doc: "not declared"}

func use(opts driver.Options) string {
	_ = unreadParam.Key(opts.Resource) // naming a key is not reading it
	raw := opts.Params["raw"]
	return readParam.Get(opts.Params) + raw + loose.Get(opts.Params)
}
