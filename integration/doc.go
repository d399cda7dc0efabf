// Package integration holds the tests that run against a real Hadoop cluster: the xres
// minicluster (docker/hadoop-minicluster) that TestMain starts, or the cluster whose
// client configuration XRES_HADOOP_CONF_DIR names. They build only with the
// "integration" tag: make integration (or go test -tags integration ./integration/...).
// Helpers for writing such tests live in integration/harness.
package integration
