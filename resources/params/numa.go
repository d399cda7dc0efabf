package params

import "github.com/xres/xres/conf"

// NUMAMemory is the memory policy the launcher gives a worker for the
// NUMA node of a resource's devices (issue 45), read by the launcher for
// every resource whatever its driver; driver.NUMAMemoryParam declares it.
var NUMAMemory = Param{Name: "numa.memory", Type: conf.TypeString, Values: []string{"preferred", "bind", "off"}, Default: "preferred"}
