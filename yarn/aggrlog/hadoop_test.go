package aggrlog

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Files a real NodeManager wrote (Hadoop's own TFile writer), copied from the
// HDFS of a minicluster with log aggregation on by the integration test
// TestAMLogsAggregated (XRES_AGGRLOG_TESTDATA): testdata/hadoop-<version>-<codec>/
// holds the node files (<host>_<port>) and, under expected/<container>/, each
// worker's stdout and stderr as the NodeManager kept them on its local disk.
// Every expected log must come out of the node files byte for byte.
func TestReaderHadoopFiles(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "hadoop-*"))
	require.NotEmpty(t, dirs, "no Hadoop-written aggregated logs under testdata/hadoop-*/")
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			got := map[string]map[string]string{} // container -> log -> body
			nodeFiles := 0
			for _, e := range entries {
				if e.IsDir() {
					continue
				}
				nodeFiles++
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				require.NoError(t, err)
				r, err := NewReader(bytes.NewReader(b), int64(len(b)))
				require.NoError(t, err, e.Name())
				for {
					c, err := r.Next()
					if err == io.EOF {
						break
					}
					require.NoError(t, err, e.Name())
					got[c] = map[string]string{}
					for {
						lf, err := r.NextFile()
						if err == io.EOF {
							break
						}
						require.NoError(t, err, "%s: %s", e.Name(), c)
						body, err := io.ReadAll(lf.Body)
						require.NoError(t, err)
						got[c][lf.Name] = string(body)
					}
				}
				require.Equal(t, 1, r.Version(), e.Name())
				require.NotEmpty(t, r.Owner(), e.Name())
				// hadoop-<version>-<codec>
				require.Equal(t, dir[strings.LastIndexByte(dir, '-')+1:], r.Codec(), e.Name())
			}
			require.GreaterOrEqual(t, nodeFiles, 2, "a node file per NodeManager")
			ctrs, err := os.ReadDir(filepath.Join(dir, "expected"))
			require.NoError(t, err)
			require.NotEmpty(t, ctrs)
			for _, c := range ctrs {
				logs, err := os.ReadDir(filepath.Join(dir, "expected", c.Name()))
				require.NoError(t, err)
				require.Contains(t, got, c.Name(), "container %s in no node file", c.Name())
				for _, l := range logs {
					want, err := os.ReadFile(filepath.Join(dir, "expected", c.Name(), l.Name()))
					require.NoError(t, err)
					require.Contains(t, string(want), "xres-aggr-marker "+l.Name()+" container="+c.Name())
					require.Equal(t, string(want), got[c.Name()][l.Name()], "%s/%s", c.Name(), l.Name())
				}
			}
		})
	}
}
