package harness

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tailLines is how much of each log a failure prints.
const tailLines = 30

// maxCopyBytes bounds what one failure copies into LogDir.
const maxCopyBytes = 64 << 20

// tail returns the last n lines of the file at path ("" if it cannot be read).
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 1<<20 {
		f.Seek(st.Size()-1<<20, io.SeekStart)
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// appContainerDirs lists the container log folders of appID on every NodeManager.
func (c *Cluster) appContainerDirs(appID string) []string {
	var dirs []string
	for _, d := range c.NodeManagerLogDirs() {
		ms, _ := filepath.Glob(filepath.Join(d, appID, "container_*"))
		dirs = append(dirs, ms...)
	}
	return dirs
}

// printAppLogs logs the tails of appID's container logs (stdout, stderr, ...).
func (c *Cluster) printAppLogs(t testing.TB, appID string) {
	t.Helper()
	dirs := c.appContainerDirs(appID)
	if len(dirs) == 0 {
		if len(c.Env) == 0 {
			t.Logf("container logs of %s: not local (a cluster named by %s); see the RM web UI", appID, EnvConfDir)
		} else {
			t.Logf("container logs of %s: none found under %v", appID, c.NodeManagerLogDirs())
		}
		return
	}
	for _, d := range dirs {
		files, _ := os.ReadDir(d)
		for _, f := range files {
			if f.IsDir() {
				continue
			}
			p := filepath.Join(d, f.Name())
			if s := tail(p, tailLines); s != "" {
				t.Logf("----- %s (last %d lines) -----\n%s", p, tailLines, s)
			}
		}
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// KeepAppLogs copies appID's container logs under LogDir/<test name>/ and prints their
// tails when the test fails. SubmitCommandApp registers it; call it for applications
// submitted some other way.
func (c *Cluster) KeepAppLogs(t testing.TB, appID string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dst := filepath.Join(c.LogDir, unsafeName.ReplaceAllString(t.Name(), "_"), appID)
		budget := int64(maxCopyBytes)
		for _, d := range c.appContainerDirs(appID) {
			if err := copyTree(d, filepath.Join(dst, filepath.Base(d)), &budget); err != nil {
				t.Logf("keep logs of %s: %v", appID, err)
			}
		}
		if len(c.appContainerDirs(appID)) > 0 {
			t.Logf("container logs of %s kept in %s", appID, dst)
		}
		c.printAppLogs(t, appID)
	})
}

// keepRunLogs runs after a failed m.Run: it copies the cluster's log and every
// container log under LogDir/run-<time>/ and prints the cluster log's tail.
func (c *Cluster) keepRunLogs() {
	if c.workDir == "" {
		fmt.Fprintf(c.log, "integration: tests failed; the cluster's logs are not local (%s)\n", EnvConfDir)
		return
	}
	dst := filepath.Join(c.LogDir, "run-"+c.started.UTC().Format("20060102T150405Z"))
	budget := int64(maxCopyBytes)
	for _, f := range []string{"minicluster.log", "minicluster.out", "cluster.env"} {
		if err := copyTree(filepath.Join(c.workDir, f), filepath.Join(dst, f), &budget); err != nil && !os.IsNotExist(err) {
			fmt.Fprintf(c.log, "integration: keep %s: %v\n", f, err)
		}
	}
	for i, d := range c.NodeManagerLogDirs() {
		if err := copyTree(d, filepath.Join(dst, fmt.Sprintf("nm%d", i)), &budget); err != nil && !os.IsNotExist(err) {
			fmt.Fprintf(c.log, "integration: keep %s: %v\n", d, err)
		}
	}
	fmt.Fprintf(c.log, "integration: tests failed; cluster and container logs kept in %s\n", dst)
	if s := tail(filepath.Join(c.workDir, "minicluster.log"), tailLines); s != "" {
		fmt.Fprintf(c.log, "----- %s (last %d lines) -----\n%s\n", filepath.Join(c.workDir, "minicluster.log"), tailLines, s)
	}
}

// copyTree copies a file or a folder's regular files, within *budget bytes.
func copyTree(src, dst string, budget *int64) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(p, target, budget)
	})
}

func copyFile(src, dst string, budget *int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(in, max(*budget, 0)))
	*budget -= n
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
