package amcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/aggrlog"
	"github.com/xres/xres/yarn/submit"
)

// Where a NodeManager uploads an application's logs (one file per node),
// under the remote root (yarn.log-aggregation.TFile.remote-app-log-dir, else
// yarn.nodemanager.remote-app-log-dir, default /tmp/logs):
//
//	<root>/<user>/<suffix>/<appId>/<host>_<port>             older layout (Hadoop ≤ 3.2; still read by 3.3+)
//	<root>/<user>/bucket-<suffix>/<NNNN>/<appId>/<host>_<port>  3.3+: NNNN = application sequence number % 10000, 4 digits
//
// The suffix differs across versions and settings ("logs", "logs-tfile",
// yarn.log-aggregation.TFile.remote-app-log-dir-suffix), so every folder
// under <root>/<user>/ is looked in. While a node uploads, its file ends in
// .tmp; with rolling aggregation a node has several files (<host>_<port>_<time>).

// logFS is what am logs needs of HDFS: list, stat and read.
type logFS interface {
	submit.ReadFS
	Stat(ctx context.Context, name string) (os.FileInfo, error)
}

// errNotAggregated says a running application has no aggregated log yet.
var errNotAggregated = errors.New("not aggregated yet")

const defaultRemoteLogDir = "/tmp/logs"

// remoteLogRoot is the remote root folder of aggregated logs, as an HDFS path.
func remoteLogRoot(hc *conf.HadoopConfig) string {
	dir, _ := hc.Get(conf.HadoopTFileRemoteAppLogDir)
	if dir == "" {
		dir, _ = hc.Get(conf.HadoopNMRemoteAppLogDir)
	}
	if dir == "" {
		dir = defaultRemoteLogDir
	}
	if u, err := url.Parse(dir); err == nil && u.Scheme != "" {
		dir = u.Path // hdfs://nn:8020/tmp/logs: the default file system's path
	}
	return path.Clean(dir)
}

// appLogDirs finds the folders under root/user that hold appID's node files.
func appLogDirs(ctx context.Context, fs logFS, root, user, appID string) ([]string, error) {
	userDir := path.Join(root, user)
	subs, err := fs.ReadDir(ctx, userDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", userDir, err)
	}
	bucket := ""
	if i := strings.LastIndexByte(appID, '_'); i >= 0 {
		if seq, err := strconv.Atoi(appID[i+1:]); err == nil && seq >= 0 {
			bucket = fmt.Sprintf("%04d", seq%10000)
		}
	}
	var dirs []string
	for _, s := range subs {
		if !s.IsDir() {
			continue
		}
		cands := []string{path.Join(userDir, s.Name(), appID)}
		if bucket != "" {
			cands = append(cands, path.Join(userDir, s.Name(), bucket, appID))
		}
		for _, c := range cands {
			fi, err := fs.Stat(ctx, c)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("stat %s: %w", c, err)
			}
			if !fi.IsDir() {
				continue
			}
			dirs = append(dirs, c)
		}
	}
	return dirs, nil
}

// nodeFileName is a node file's name: host_port, then _time when rolled.
var nodeFileName = regexp.MustCompile(`^(.+?)_([0-9]+)(_[0-9]+)?$`)

// nodeOf turns a node file's name back into the node id (host:port).
func nodeOf(name string) string {
	if m := nodeFileName.FindStringSubmatch(name); m != nil {
		return m[1] + ":" + m[2]
	}
	return name
}

// aggregatedLogs prints every container's logs of application id from its
// aggregated log files in HDFS, in the layout of the NodeManager path
// (Container: … on …, LogType:, the log, End of LogType:). It returns
// errNotAggregated when the application still runs and no node has
// uploaded anything yet (the caller reads the NodeManagers instead). krb is
// the Kerberos login on a secure cluster (nil otherwise).
func aggregatedLogs(ctx context.Context, e *env, rm rmAPI, hc *conf.HadoopConfig, krb *yarn.Kerberos, id string) error {
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	r, err := rm.ApplicationReport(rctx, id)
	cancel()
	if err != nil {
		return clusterError{fmt.Errorf("get report of %s: %w", id, err)}
	}
	user := r.User
	if user == "" {
		user = yarn.CurrentUser(e.getenv)
	}
	if e.deps.hdfs == nil {
		return fmt.Errorf("%w: no HDFS client to read aggregated logs with", errNotWired)
	}
	hfs, closeFS, err := e.deps.hdfs(hc, user, krb)
	if isConfigErr(err) {
		return configError{err}
	}
	if err != nil {
		return clusterError{fmt.Errorf("read the aggregated logs of %s: %w", id, err)}
	}
	defer closeFS()
	rfs, ok := hfs.(logFS)
	if !ok {
		return fmt.Errorf("%w: the HDFS client cannot list or read files", errNotWired)
	}
	root := remoteLogRoot(hc)
	lctx, cancel := context.WithTimeout(ctx, 10*time.Minute) // listing and printing every log
	defer cancel()
	dirs, err := appLogDirs(lctx, rfs, root, user, id)
	if err != nil {
		return clusterError{fmt.Errorf("find the aggregated logs of %s: %w", id, err)}
	}
	type nodeFile struct{ dir, name string }
	var files []nodeFile
	var uploading, archived []string
	for _, d := range dirs {
		entries, err := rfs.ReadDir(lctx, d)
		if err != nil {
			return clusterError{fmt.Errorf("list %s: %w", d, err)}
		}
		for _, fi := range entries {
			switch {
			case fi.IsDir() && strings.HasSuffix(fi.Name(), ".har"):
				archived = append(archived, path.Join(d, fi.Name()))
			case fi.IsDir():
			case strings.HasSuffix(fi.Name(), ".tmp"):
				uploading = append(uploading, path.Join(d, fi.Name()))
			default:
				files = append(files, nodeFile{d, fi.Name()})
			}
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	where := path.Join(root, user) + "/"
	if len(files) == 0 {
		switch {
		case len(archived) > 0:
			return clusterError{fmt.Errorf("%w: the aggregated logs of %s are archived in a Hadoop archive (%s), which am logs does not read: run yarn logs -applicationId %s", errNoLogs, id, strings.Join(archived, ", "), id)}
		case !r.Ended():
			fmt.Fprintf(e.stderr, "am logs: %s is %s: log aggregation is on, and its logs reach HDFS (%s) when it ends; nothing there yet, so reading them from the NodeManagers\n", id, r.State, where)
			return errNotAggregated
		case len(uploading) > 0:
			return clusterError{fmt.Errorf("%w: log aggregation is on, and %s ended (%s): its NodeManagers are uploading its logs (%s): run am logs again in a moment", errNoLogs, id, r.State, strings.Join(uploading, ", "))}
		default:
			return clusterError{fmt.Errorf("%w: log aggregation is on, and %s ended (%s), but HDFS holds no aggregated log of it under %s (looked for <suffix>/%s and bucket-<suffix>/<bucket>/%s): not aggregated yet, failed, or already deleted (yarn.log-aggregation.retain-seconds)", errNoLogs, id, r.State, where, id, id)}
		}
	}
	if len(uploading) > 0 {
		fmt.Fprintf(e.stderr, "am logs: still uploading, not shown: %s\n", strings.Join(uploading, ", "))
	}
	var failed []string
	for _, f := range files {
		p := path.Join(f.dir, f.name)
		if err := printNodeFile(lctx, e, rfs, p, nodeOf(f.name)); err != nil {
			fmt.Fprintf(e.stderr, "am logs: %v\n", err)
			failed = append(failed, err.Error())
		}
	}
	if len(failed) > 0 {
		return clusterError{fmt.Errorf("%w: %d of %d aggregated log files of %s not read: %s", errNoLogs, len(failed), len(files), id, strings.Join(failed, "; "))}
	}
	return nil
}

// printNodeFile prints the containers of one node's aggregated log file.
func printNodeFile(ctx context.Context, e *env, fs logFS, p, node string) error {
	f, err := fs.Open(ctx, p)
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	defer f.Close()
	r, err := aggrlog.NewReader(f, f.Size())
	if errors.Is(err, aggrlog.ErrNotTFile) {
		return fmt.Errorf("read %s: %w (an IFile, yarn.log-aggregation.file-formats, is not read by am logs; or a damaged upload)", p, err)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	for {
		c, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		fmt.Fprintf(e.stdout, "Container: %s on %s\n", c, node)
		for {
			lf, err := r.NextFile()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("read %s (container %s): %w", p, c, err)
			}
			fmt.Fprintf(e.stdout, "LogType: %s\n", lf.Name)
			last, err := copyLog(e.stdout, lf.Body)
			if err != nil {
				return fmt.Errorf("read %s (container %s, %s): %w", p, c, lf.Name, err)
			}
			if lf.Length > 0 && last != '\n' {
				fmt.Fprintln(e.stdout)
			}
			fmt.Fprintf(e.stdout, "End of LogType: %s\n\n", lf.Name)
		}
	}
}

// copyLog copies a log body and returns its last byte.
func copyLog(w io.Writer, r io.Reader) (byte, error) {
	buf := make([]byte, 32<<10)
	var last byte
	for {
		n, err := r.Read(buf)
		if n > 0 {
			last = buf[n-1]
			if _, werr := w.Write(buf[:n]); werr != nil {
				return last, werr
			}
		}
		if err == io.EOF {
			return last, nil
		}
		if err != nil {
			return last, err
		}
	}
}
