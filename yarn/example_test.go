package yarn_test

import (
	"errors"
	"fmt"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
)

// A client for an HA pair of ResourceManagers: the addresses come from the
// Hadoop configuration (here set by hand; conf.LoadHadoop reads
// $HADOOP_CONF_DIR), and NewClient dials nothing until the first call.
func ExampleNewClient() {
	hc := conf.NewHadoopConfig(func(string) string { return "" })
	hc.Set("yarn.resourcemanager.ha.enabled", "true")
	hc.Set("yarn.resourcemanager.ha.rm-ids", "rm1,rm2")
	hc.Set("yarn.resourcemanager.address.rm1", "rm1.example.com:8032")
	hc.Set("yarn.resourcemanager.address.rm2", "rm2.example.com:8032")

	addrs, err := yarn.RMAddresses(hc, yarn.RMClient)
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := yarn.NewClient(yarn.ClientConfig{Addrs: addrs, User: "alice"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	fmt.Println(addrs)
	// Output:
	// [rm1.example.com:8032 rm2.example.com:8032]
}

// A container size with an extended resource, checked against the resource
// types the RM reported before it goes into an ask (the RM would silently
// drop a name it does not know).
func ExampleCheckResource() {
	worker := yarn.Resource{MemoryMB: 4096, VCores: 2, Extra: map[string]int64{"yarn.io/gpu": 1}}
	fmt.Println(worker, worker.Value("yarn.io/gpu"))

	known := []yarn.ResourceType{{Name: "memory-mb", Units: "Mi"}, {Name: "vcores"}}
	err := yarn.CheckResource(known, worker)
	fmt.Println(errors.Is(err, yarn.ErrResourceNotFound))

	known = append(known, yarn.ResourceType{Name: "yarn.io/gpu"})
	fmt.Println(yarn.CheckResource(known, worker))
	// Output:
	// <memory:4096, vCores:2, yarn.io/gpu: 1> 1
	// true
	// <nil>
}

// Whose fault a container's end is, as the AM counts it toward
// yarn.maximum-failed-containers.
func ExampleExitCauseOf() {
	for _, status := range []int{1, -100, -102, -101} {
		switch yarn.ExitCauseOf(status) {
		case yarn.CauseApp:
			fmt.Println(status, "the application's: counted")
		case yarn.CauseCluster:
			fmt.Println(status, "the cluster's: replaced, not counted")
		case yarn.CauseNode:
			fmt.Println(status, "the node's: replaced, node blacklisted")
		}
	}
	// Output:
	// 1 the application's: counted
	// -100 the cluster's: replaced, not counted
	// -102 the cluster's: replaced, not counted
	// -101 the node's: replaced, node blacklisted
}

// Application ids as `am` and `yarn application` print them.
func ExampleParseApplicationID() {
	id, err := yarn.ParseApplicationID("application_1700000000000_0042")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(id.GetClusterTimestamp(), id.GetId(), yarn.ApplicationID(id))

	_, err = yarn.ParseApplicationID("app_42")
	fmt.Println(err != nil)
	// Output:
	// 1700000000000 42 application_1700000000000_0042
	// true
}
