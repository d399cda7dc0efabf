package spark

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/xres/xres/conf/localfile"
	"github.com/xres/xres/resources"
)

// Spark's formats for telling an executor its resources (Spark 3.5):
//
//	ResourceInformation, what a discovery script prints:
//	  {"name": "gpu", "addresses": ["0", "1"]}
//	the resources file an executor reads (--resourcesFile; Spark's
//	standalone Worker writes it), a list of ResourceAllocation:
//	  [ {"id": {"componentName": "spark.executor", "resourceName": "gpu"},
//	     "addresses": ["0", "1"]} ]

// SparkExecutor is the component name of an executor's resources.
const SparkExecutor = "spark.executor"

// SparkResourceInformation is Spark's ResourceInformation JSON.
type SparkResourceInformation struct {
	Name      string   `json:"name"`
	Addresses []string `json:"addresses"`
}

type sparkResourceID struct {
	ComponentName string `json:"componentName"`
	ResourceName  string `json:"resourceName"`
}

type sparkAllocation struct {
	ID        sparkResourceID `json:"id"`
	Addresses []string        `json:"addresses"`
}

// SparkAddresses names a resource's devices as a Spark executor must use
// them. narrowed says the launcher set the vendor's visible-devices
// variable (its driver's, driver.VendorReporter): the worker's
// runtime then numbers exactly these devices from 0, so the addresses are
// 0…n-1 (what spark-rapids hands to cudaSetDevice). Otherwise each device's
// index, its uuid where it has none.
func SparkAddresses(devices []resources.Info, narrowed bool) []string {
	out := make([]string, len(devices))
	for i, d := range devices {
		if narrowed {
			out[i] = strconv.Itoa(i)
			continue
		}
		if v, ok := d.Property("index"); ok && v != "" {
			out[i] = v
		} else {
			out[i], _ = d.Property("uuid")
		}
	}
	return out
}

// SparkResourcesFile renders the resources file of component (SparkExecutor
// for executors) for the given addresses per resource name, sorted by name.
// A resource with an empty address is an error naming it: Spark would fail
// to use it.
func SparkResourcesFile(component string, addresses map[string][]string) ([]byte, error) {
	names := make([]string, 0, len(addresses))
	for n := range addresses {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]sparkAllocation, 0, len(names))
	for _, n := range names {
		for _, a := range addresses[n] {
			if a == "" {
				return nil, fmt.Errorf("spark resources file: resource %s has a device without address", n)
			}
		}
		out = append(out, sparkAllocation{ID: sparkResourceID{ComponentName: component, ResourceName: n},
			Addresses: append([]string{}, addresses[n]...)})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteSparkResourcesFile writes SparkResourcesFile(component, addresses)
// to path atomically (as WriteInfoFile), for an executor started with
// --resourcesFile path.
func WriteSparkResourcesFile(path, component string, addresses map[string][]string) error {
	data, err := SparkResourcesFile(component, addresses)
	if err != nil {
		return err
	}
	if err := localfile.WriteFileAtomic(path, data, 0o644); err != nil {
		return fmt.Errorf("write spark resources file %s: %w", path, err)
	}
	return nil
}
