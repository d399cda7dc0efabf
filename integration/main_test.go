//go:build integration

package integration

import (
	"os"
	"testing"

	"github.com/xres/xres/integration/harness"
)

// TestMain starts the cluster (or uses XRES_HADOOP_CONF_DIR's) and stops what it started;
// no cluster is a failure, never a skip.
func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
