package rest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/rest"
)

// How xres finds the RM and lists the GPUs of each NodeManager. The fake RM
// serves a recorded answer of the minicluster.
func Example() {
	nodes, _ := os.ReadFile("testdata/nodes.json")
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(nodes) }))
	defer rm.Close()

	// Normally conf.LoadHadoop("") reads $HADOOP_CONF_DIR/yarn-site.xml.
	hc := conf.NewHadoopConfig(nil)
	hc.Set("yarn.resourcemanager.webapp.address", strings.TrimPrefix(rm.URL, "http://"))
	urls, err := yarn.RMWebappURLs(hc)
	if err != nil {
		fmt.Println(err)
		return
	}
	cl, err := rest.New(rest.Config{Endpoints: urls, User: "alice"})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	running, err := cl.Nodes(ctx, "RUNNING")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range running {
		gpus, _ := n.Total("yarn.io/gpu")
		fmt.Println(n.ID, n.State, "yarn.io/gpu =", gpus)
	}
	// Output:
	// localhost:46047 RUNNING yarn.io/gpu = 2
	// localhost:35713 RUNNING yarn.io/gpu = 2
}
