package submit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/internal/logutil"
)

// ErrBadFile is wrapped by errors about the files to stage.
var ErrBadFile = errors.New("invalid file to stage")

// FS is what staging needs from a Hadoop file system: the few
// colinmarc/hdfs/v2 Client methods, with a context (the adapter checks it
// between calls, as the hdfs client takes none).
type FS interface {
	MkdirAll(ctx context.Context, dir string, perm os.FileMode) error
	CopyToRemote(ctx context.Context, local, remote string) error
	Stat(ctx context.Context, name string) (os.FileInfo, error)
	RemoveAll(ctx context.Context, name string) error
}

// File is one local file to ship: it appears as Name in every container's
// working directory.
type File struct {
	Local string
	Name  string
	Type  yarn.LocalResourceType // yarn.File (default) or yarn.Archive (unpacked)
	// Mode, when not 0, is the staged copy's permission (0600 for the
	// keytab); the FS must then be a Chmoder.
	Mode os.FileMode
	// Shared files (xres's own binaries, the same for every application
	// of a build) go to the Stager's CacheDir under their content's hash
	// instead of the staging folder: uploaded once, and localized once per
	// NodeManager for all applications where the NodeManagers may read
	// them (PUBLIC visibility).
	Shared bool
}

// Chmoder is an FS that sets a file's permission.
type Chmoder interface {
	Chmod(ctx context.Context, name string, perm os.FileMode) error
}

// Files lists what an application ships: the am and container-launcher
// binaries, the launcher's NVML and NodeManager REST helpers when they are beside the launcher, the
// Flink configuration (under its own base name, so its format is kept:
// flink-conf.yaml or config.yaml) and the user's files.
// A user file is "path" or "path#name" (Hadoop's -files syntax); .tar.gz,
// .tgz, .tar and .zip files are unpacked (ARCHIVE). Names must be unique.
func Files(amPath, launcherPath, confPath string, userFiles []string) ([]File, error) {
	files := []File{
		{Local: amPath, Name: AMBinary, Type: yarn.File, Shared: true},
		{Local: launcherPath, Name: LauncherBinary, Type: yarn.File, Shared: true},
	}
	for _, name := range []string{NVMLHelper, NMRESTHelper} {
		if helper := filepath.Join(filepath.Dir(launcherPath), name); isRegular(helper) {
			files = append(files, File{Local: helper, Name: name, Type: yarn.File, Shared: true})
		}
	}
	if name := ConfName(confPath); name != "" {
		files = append(files, File{Local: confPath, Name: name, Type: yarn.File})
	}
	for _, spec := range userFiles {
		local, name, hasName := strings.Cut(spec, "#")
		if !hasName {
			name = filepath.Base(local)
		}
		if local == "" || name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			return nil, fmt.Errorf("%w: --files %q: want PATH or PATH#NAME with a plain NAME", ErrBadFile, spec)
		}
		typ := yarn.File
		for _, ext := range []string{".tar.gz", ".tgz", ".tar", ".zip"} {
			if strings.HasSuffix(local, ext) {
				typ = yarn.Archive
			}
		}
		files = append(files, File{Local: local, Name: name, Type: typ})
	}
	seen := map[string]string{}
	for _, f := range files {
		if prev, dup := seen[f.Name]; dup {
			return nil, fmt.Errorf("%w: %s and %s would both be %q in the container; rename one with PATH#NAME", ErrBadFile, prev, f.Local, f.Name)
		}
		seen[f.Name] = f.Local
	}
	return files, nil
}

func isRegular(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// StagingDir is the application's staging folder: /user/<user>/.xres/<appId>.
func StagingDir(user, appID string) string {
	return path.Join("/user", user, ".xres", appID)
}

// SharedDir is where the user's applications share xres's binaries
// (File.Shared): /user/<user>/.xres-shared/<hash>/<name>, readable by all
// (mode 0755), never removed by an application.
func SharedDir(user string) string {
	return path.Join("/user", user, ".xres-shared")
}

// Staged is the outcome of Stage: the folder and one local resource per
// file, keyed by link name.
type Staged struct {
	Dir       string
	Resources map[string]yarn.LocalResource
}

// Stager copies files into a staging folder on a Hadoop file system.
type Stager struct {
	FS FS
	// DefaultFS is fs.defaultFS, e.g. hdfs://namenode:8020: the scheme and
	// authority of every resource URL.
	DefaultFS string
	// CacheDir holds the Shared files (SharedDir); "": they are staged as
	// the others.
	CacheDir string
	Log      logrus.FieldLogger
}

// Renamer is an FS that renames a file, failing when the target exists.
type Renamer interface {
	Rename(ctx context.Context, from, to string) error
}

// shared puts f into s.CacheDir under its content's hash, unless a file of
// its size is there already (a concurrent submission's, or an earlier
// one's), and returns its remote path and whether the NodeManagers may
// localize it as PUBLIC: the file readable by others and every folder above
// it searchable by others, as Hadoop's FSDownload checks (else the
// NodeManager would refuse it; it is then an APPLICATION resource, still
// uploaded once).
func (s Stager) shared(ctx context.Context, f File) (remote string, public bool, err error) {
	sum, size, err := fileHash(f.Local)
	if err != nil {
		return "", false, fmt.Errorf("stage %s: %w", f.Local, err)
	}
	dir := path.Join(s.CacheDir, sum)
	remote = path.Join(dir, f.Name)
	if st, err := s.FS.Stat(ctx, remote); err != nil || st.Size() != size {
		if err := s.FS.MkdirAll(ctx, dir, 0o755); err != nil {
			return "", false, fmt.Errorf("create shared folder %s: %w", dir, err)
		}
		tmp := fmt.Sprintf("%s.%d.tmp", remote, time.Now().UnixNano())
		r, canRename := s.FS.(Renamer)
		if !canRename {
			tmp = remote
		}
		if err := s.FS.CopyToRemote(ctx, f.Local, tmp); err != nil {
			return "", false, fmt.Errorf("copy %s to %s: %w", f.Local, tmp, err)
		}
		if c, ok := s.FS.(Chmoder); ok {
			if err := c.Chmod(ctx, tmp, 0o755); err != nil {
				return "", false, fmt.Errorf("set the permission of %s: %w", tmp, err)
			}
		}
		if canRename {
			if err := r.Rename(ctx, tmp, remote); err != nil {
				// Another submission put it there first: keep that one.
				_ = s.FS.RemoveAll(context.WithoutCancel(ctx), tmp)
				if st, serr := s.FS.Stat(ctx, remote); serr != nil || st.Size() != size {
					return "", false, fmt.Errorf("rename %s to %s: %w", tmp, remote, err)
				}
			}
		}
	}
	return remote, s.publicPath(ctx, remote), nil
}

// publicPath says whether others may read name and search every folder
// above it.
func (s Stager) publicPath(ctx context.Context, name string) bool {
	st, err := s.FS.Stat(ctx, name)
	if err != nil || st.Mode().Perm()&0o004 == 0 {
		return false
	}
	for dir := path.Dir(name); ; dir = path.Dir(dir) {
		st, err := s.FS.Stat(ctx, dir)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if dir == "/" {
			return true
		}
	}
}

// fileHash is the hex SHA-256 of a local file (its first 32 digits) and
// its size.
func fileHash(name string) (string, int64, error) {
	fh, err := os.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil))[:32], n, nil
}

// Stage creates dir, copies every file into it and stats each copy for the
// exact size and modification time the NodeManager checks. Local files are
// checked first, so a missing one fails before anything is copied. On any
// failure the folder is removed again.
func (s Stager) Stage(ctx context.Context, dir string, files []File) (Staged, error) {
	base, err := parseDefaultFS(s.DefaultFS)
	if err != nil {
		return Staged{}, err
	}
	for _, f := range files {
		st, err := os.Stat(f.Local)
		if err != nil {
			return Staged{}, fmt.Errorf("stage %s: %w: %w", f.Local, ErrBadFile, err)
		}
		if st.IsDir() {
			return Staged{}, fmt.Errorf("stage %s: %w: is a directory (pack it as .tar.gz or .zip)", f.Local, ErrBadFile)
		}
		if _, ok := s.FS.(Chmoder); f.Mode != 0 && !ok {
			return Staged{}, fmt.Errorf("stage %s: the file system cannot set its permission %o", f.Local, f.Mode)
		}
	}
	log := logutil.OrDiscard(s.Log)
	out := Staged{Dir: dir, Resources: map[string]yarn.LocalResource{}}
	fail := func(err error) (Staged, error) {
		if cerr := s.FS.RemoveAll(context.WithoutCancel(ctx), dir); cerr != nil {
			return Staged{}, errors.Join(err, fmt.Errorf("remove staging folder %s: %w", dir, cerr))
		}
		return Staged{}, err
	}
	if err := s.FS.MkdirAll(ctx, dir, 0o700); err != nil {
		return fail(fmt.Errorf("create staging folder %s: %w", dir, err))
	}
	for _, f := range files {
		remote := path.Join(dir, f.Name)
		visibility := yarn.Application
		if f.Shared && s.CacheDir != "" && f.Mode == 0 {
			var public bool
			var err error
			if remote, public, err = s.shared(ctx, f); err != nil {
				return fail(err)
			}
			if public {
				visibility = yarn.Public
			}
		} else if err := s.FS.CopyToRemote(ctx, f.Local, remote); err != nil {
			return fail(fmt.Errorf("copy %s to %s: %w", f.Local, remote, err))
		}
		if f.Mode != 0 {
			if err := s.FS.(Chmoder).Chmod(ctx, remote, f.Mode); err != nil {
				return fail(fmt.Errorf("set the permission of %s: %w", remote, err))
			}
		}
		st, err := s.FS.Stat(ctx, remote)
		if err != nil {
			return fail(fmt.Errorf("stat %s: %w", remote, err))
		}
		u := base
		u.File = remote
		typ := f.Type
		if typ == 0 {
			typ = yarn.File
		}
		out.Resources[f.Name] = yarn.LocalResource{URL: u, Size: st.Size(), Timestamp: st.ModTime().UnixMilli(),
			Type: typ, Visibility: visibility}
		log.WithFields(logrus.Fields{"file": f.Local, "remote": remote, "size": st.Size(), "visibility": visibility}).Debug("staged")
	}
	return out, nil
}

// Cleanup removes the staging folder (gone already is fine).
func (s Stager) Cleanup(ctx context.Context, dir string) error {
	if err := s.FS.RemoveAll(ctx, dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove staging folder %s: %w", dir, err)
	}
	return nil
}

func parseDefaultFS(s string) (yarn.ResourceURL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return yarn.ResourceURL{}, fmt.Errorf("%s %q: want scheme://host[:port], e.g. hdfs://namenode:8020", conf.HadoopDefaultFS, s)
	}
	out := yarn.ResourceURL{Scheme: u.Scheme, Host: u.Hostname()}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil {
			return yarn.ResourceURL{}, fmt.Errorf("%s %q: bad port", conf.HadoopDefaultFS, s)
		}
		out.Port = int32(n)
	}
	return out, nil
}
