package harness

import (
	"testing"

	"github.com/colinmarc/hdfs/v2"
)

// HDFS returns a client for the cluster's NameNode acting as c.User (simple
// authentication), closed when the test ends.
func (c *Cluster) HDFS(t testing.TB) *hdfs.Client {
	t.Helper()
	cl, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{c.NameNode}, User: c.User})
	if err != nil {
		t.Fatalf("hdfs client for %s as %s: %v", c.NameNode, c.User, err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}
