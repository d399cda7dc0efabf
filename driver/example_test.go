package driver_test

import (
	"context"
	"fmt"

	"github.com/xres/xres/driver"
	"github.com/xres/xres/driver/drivertest"
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
