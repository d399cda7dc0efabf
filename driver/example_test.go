package driver_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/drivertest"
	"github.com/xres/xres/resources"
)

// A registry is filled explicitly; Flink's class names are aliases.
func ExampleRegistry() {
	r := driver.NewRegistry()
	fake := drivertest.New(drivertest.Devices(drivertest.GPUs(2)...))
	if err := r.Register("xres.gpu", fake.Factory(), "org.apache.flink.externalresource.gpu.GPUDriverFactory"); err != nil {
		fmt.Println(err)
		return
	}
	f, _ := r.Lookup("org.apache.flink.externalresource.gpu.GPUDriverFactory")
	d, _ := f.NewDriver(driver.Options{Resource: "gpu"})
	infos, _ := d.Discover(context.Background(), 1)
	index, _ := infos[0].Property("index")
	fmt.Println("index", index)

	_, err := r.Lookup("com.example.Missing")
	fmt.Println(err)
	// Output:
	// index 0
	// look up driver factory "com.example.Missing": unknown driver factory (known: org.apache.flink.externalresource.gpu.GPUDriverFactory, xres.gpu)
}

// Without a Reserver every caller gets the first devices (Flink's
// non-coordination mode); with coord.Host they are reserved host-wide.
func ExampleNewCoordinated() {
	enum := drivertest.New(drivertest.Devices(drivertest.GPUs(4)...))
	d := driver.NewCoordinated("gpu", enum, driver.CoordinatedOptions{})
	infos, _ := d.Discover(context.Background(), 2)
	for _, in := range infos {
		u, _ := in.Property("uuid")
		fmt.Println(u)
	}
	// Output:
	// GPU-fake-0
	// GPU-fake-1
}

// A driver of one's own: a Factory that reads its declared params through
// their typed readers and a Driver that returns one property map per device.
// Register it under a name (driver.Registry.Register) and configurations
// select it with external-resource.<name>.driver-factory.class.
func ExampleFactoryFunc() {
	// Real drivers declare their params once, at package level, so that the
	// configuration reference lists them.
	countParam := driver.Declare(driver.Param{Name: "example.count", Type: conf.TypeInt, Default: "2",
		Doc: "How many devices the example driver offers."})

	factory := driver.FactoryFunc(func(opts driver.Options) (driver.Driver, error) {
		n, err := strconv.Atoi(countParam.Get(opts.Params))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", countParam.Key(opts.Resource), err)
		}
		return fixed(n), nil
	})

	d, err := factory.NewDriver(driver.Options{Resource: "widget", Params: map[string]string{"example.count": "3"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	infos, err := d.Discover(context.Background(), 2)
	fmt.Println(len(infos), err)

	_, err = factory.NewDriver(driver.Options{Resource: "widget", Params: map[string]string{"example.count": "many"}})
	fmt.Println(err != nil, countParam.Key("widget"))
	// Output:
	// 2 <nil>
	// true external-resource.widget.param.example.count
}

// fixed offers n devices and hands out the first amount of them.
type fixed int

func (n fixed) Discover(_ context.Context, amount int64) ([]resources.Info, error) {
	if amount > int64(n) {
		return nil, fmt.Errorf("want %d devices, have %d", amount, n)
	}
	infos := make([]resources.Info, amount)
	for i := range infos {
		infos[i] = resources.Properties{"index": strconv.Itoa(i)}
	}
	return infos, nil
}
