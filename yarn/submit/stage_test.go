package submit

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
)

// memFS is an in-memory FS: files hold their content; copyErr and statErr
// fail chosen remote paths.
type memFS struct {
	mu      sync.Mutex
	dirs    map[string]bool
	files   map[string][]byte
	mtime   time.Time
	copyErr map[string]error
	removed []string
}

func newMemFS() *memFS {
	return &memFS{dirs: map[string]bool{}, files: map[string][]byte{}, mtime: time.UnixMilli(1700000000123)}
}

func (m *memFS) MkdirAll(ctx context.Context, dir string, perm os.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dirs[dir] = true
	return nil
}

func (m *memFS) CopyToRemote(ctx context.Context, local, remote string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.copyErr[remote]; err != nil {
		return err
	}
	if !m.dirs[path.Dir(remote)] {
		return &fs.PathError{Op: "create", Path: remote, Err: fs.ErrNotExist}
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return err
	}
	m.files[remote] = data
	return nil
}

type memInfo struct {
	name  string
	size  int64
	mtime time.Time
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return 0o644 }
func (i memInfo) ModTime() time.Time { return i.mtime }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

func (m *memFS) Stat(ctx context.Context, name string) (os.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return memInfo{name: path.Base(name), size: int64(len(data)), mtime: m.mtime}, nil
}

func (m *memFS) RemoveAll(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removed = append(m.removed, name)
	for f := range m.files {
		if strings.HasPrefix(f, name+"/") {
			delete(m.files, f)
		}
	}
	delete(m.dirs, name)
	return nil
}

func localFiles(t *testing.T) (amBin, launcher, confFile, data string) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
		return p
	}
	return write("am", "AM-BINARY"), write("container-launcher", "LAUNCHER"), write("flink-conf.yaml", "parallelism.default: 2\n"), write("data.csv", "a,b\n1,2\n")
}

func TestStage(t *testing.T) {
	amBin, launcher, confFile, data := localFiles(t)
	files, err := Files(amBin, launcher, confFile, []string{data, data + "#input.csv"})
	require.NoError(t, err)
	mfs := newMemFS()
	s := Stager{FS: mfs, DefaultFS: "hdfs://namenode:8020"}
	dir := StagingDir("alice", "application_1_0002")
	require.Equal(t, "/user/alice/.xres/application_1_0002", dir)

	staged, err := s.Stage(context.Background(), dir, files)
	require.NoError(t, err)
	require.Equal(t, dir, staged.Dir)
	require.Equal(t, yarn.LocalResource{
		URL:  yarn.ResourceURL{Scheme: "hdfs", Host: "namenode", Port: 8020, File: dir + "/am"},
		Size: int64(len("AM-BINARY")), Timestamp: 1700000000123, Type: yarn.File, Visibility: yarn.Application,
	}, staged.Resources["am"])
	require.Equal(t, []string{"am", "container-launcher", "data.csv", "flink-conf.yaml", "input.csv"}, slices.Sorted(maps.Keys(staged.Resources)))
	require.Equal(t, int64(8), staged.Resources["input.csv"].Size)
	require.Equal(t, "parallelism.default: 2\n", string(mfs.files[dir+"/flink-conf.yaml"]))

	require.NoError(t, s.Cleanup(context.Background(), dir))
	require.Empty(t, mfs.files)
}

func TestStageFailureCleansUp(t *testing.T) {
	amBin, launcher, confFile, _ := localFiles(t)
	files, err := Files(amBin, launcher, confFile, nil)
	require.NoError(t, err)
	dir := StagingDir("alice", "application_1_0003")

	t.Run("copy fails", func(t *testing.T) {
		mfs := newMemFS()
		mfs.copyErr = map[string]error{dir + "/container-launcher": errors.New("no datanode available")}
		_, err := Stager{FS: mfs, DefaultFS: "hdfs://nn:8020"}.Stage(context.Background(), dir, files)
		require.ErrorContains(t, err, "copy "+launcher+" to "+dir+"/container-launcher: no datanode available")
		require.Equal(t, []string{dir}, mfs.removed)
		require.Empty(t, mfs.files)
	})
	t.Run("missing local file fails before copying", func(t *testing.T) {
		mfs := newMemFS()
		bad := append(files, File{Local: filepath.Join(t.TempDir(), "nope.py"), Name: "nope.py"})
		_, err := Stager{FS: mfs, DefaultFS: "hdfs://nn:8020"}.Stage(context.Background(), dir, bad)
		require.ErrorIs(t, err, ErrBadFile)
		require.ErrorContains(t, err, "nope.py")
		require.Empty(t, mfs.dirs)
	})
	t.Run("directory refused", func(t *testing.T) {
		_, err := Stager{FS: newMemFS(), DefaultFS: "hdfs://nn:8020"}.Stage(context.Background(), dir, []File{{Local: t.TempDir(), Name: "d"}})
		require.ErrorContains(t, err, "is a directory")
	})
	t.Run("bad defaultFS", func(t *testing.T) {
		_, err := Stager{FS: newMemFS(), DefaultFS: "namenode"}.Stage(context.Background(), dir, files)
		require.ErrorContains(t, err, `fs.defaultFS "namenode": want scheme://host[:port]`)
	})
}

// The launcher's NVML and NodeManager REST helpers ship with it when they are
// beside it, under their own names, which a user file may not take.
func TestFilesShipTheNVMLHelper(t *testing.T) {
	for _, name := range []string{"xres-nvml", "xres-nmrest"} {
		t.Run(name, func(t *testing.T) {
			amBin, launcher, confFile, data := localFiles(t)
			helper := filepath.Join(filepath.Dir(launcher), name)
			require.NoError(t, os.WriteFile(helper, []byte("HELPER"), 0o755))
			files, err := Files(amBin, launcher, confFile, nil)
			require.NoError(t, err)
			require.Contains(t, files, File{Local: helper, Name: name, Type: yarn.File, Shared: true})
			_, err = Files(amBin, launcher, confFile, []string{data + "#" + name})
			require.ErrorContains(t, err, `would both be "`+name+`"`)

			require.NoError(t, os.Remove(helper))
			files, err = Files(amBin, launcher, confFile, nil)
			require.NoError(t, err)
			for _, f := range files {
				require.NotEqual(t, name, f.Name, "no helper beside the launcher, none shipped")
			}
		})
	}
}

func TestFiles(t *testing.T) {
	tests := []struct {
		name  string
		user  []string
		names []string
		types []yarn.LocalResourceType
		err   string
	}{
		{name: "no user files", names: []string{"am", "container-launcher", "flink-conf.yaml"}, types: []yarn.LocalResourceType{yarn.File, yarn.File, yarn.File}},
		{name: "alias and archive", user: []string{"/x/train.py", "/x/env.tar.gz#venv"},
			names: []string{"am", "container-launcher", "flink-conf.yaml", "train.py", "venv"},
			types: []yarn.LocalResourceType{yarn.File, yarn.File, yarn.File, yarn.File, yarn.Archive}},
		{name: "clash with a reserved name", user: []string{"/x/am"}, err: `would both be "am"`},
		{name: "clash between user files", user: []string{"/a/x.py", "/b/x.py"}, err: `/a/x.py and /b/x.py would both be "x.py"`},
		{name: "slash in alias", user: []string{"/a/x.py#dir/x.py"}, err: "want PATH or PATH#NAME with a plain NAME"},
		{name: "empty alias", user: []string{"/a/x.py#"}, err: "want PATH or PATH#NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := Files("/bin/am", "/bin/container-launcher", "/etc/flink/flink-conf.yaml", tt.user)
			if tt.err != "" {
				require.ErrorIs(t, err, ErrBadFile)
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			var names []string
			var types []yarn.LocalResourceType
			for _, f := range files {
				names = append(names, f.Name)
				types = append(types, f.Type)
			}
			require.Equal(t, tt.names, names)
			require.Equal(t, tt.types, types)
		})
	}
}

func TestConfName(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"", ""},
		{"/etc/flink/flink-conf.yaml", "flink-conf.yaml"},
		{"conf/config.yaml", "config.yaml"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			require.Equal(t, tc.want, ConfName(tc.path))
		})
	}
}

// permFS is a memFS whose folders have modes (Stat answers for them) and
// that counts copies.
type permFS struct {
	*memFS
	dirMode map[string]fs.FileMode // folder → mode; others 0755
	copies  int
}

type dirInfo struct {
	memInfo
	mode fs.FileMode
}

func (i dirInfo) Mode() fs.FileMode { return i.mode | fs.ModeDir }
func (i dirInfo) IsDir() bool       { return true }

func (p *permFS) Stat(ctx context.Context, name string) (os.FileInfo, error) {
	p.mu.Lock()
	_, isFile := p.files[name]
	p.mu.Unlock()
	if isFile {
		return p.memFS.Stat(ctx, name)
	}
	mode, ok := p.dirMode[name]
	if !ok {
		mode = 0o755
	}
	return dirInfo{memInfo: memInfo{name: path.Base(name)}, mode: mode}, nil
}

func (p *permFS) CopyToRemote(ctx context.Context, local, remote string) error {
	p.copies++
	return p.memFS.CopyToRemote(ctx, local, remote)
}

// xres's binaries go to the shared folder under their content's hash,
// uploaded once for any number of applications, and are PUBLIC where the
// NodeManagers may read them (every folder above searchable by others),
// else APPLICATION; the configuration stays in the staging folder.
func TestStageSharesTheBinaries(t *testing.T) {
	amBin, launcher, confFile, _ := localFiles(t)
	files, err := Files(amBin, launcher, confFile, nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		mode fs.FileMode // of /user/alice
		want yarn.Visibility
	}{
		{"home searchable", 0o755, yarn.Public},
		{"home private", 0o700, yarn.Application},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pfs := &permFS{memFS: newMemFS(), dirMode: map[string]fs.FileMode{"/user/alice": tc.mode}}
			s := Stager{FS: pfs, DefaultFS: "hdfs://namenode:8020", CacheDir: SharedDir("alice")}
			first, err := s.Stage(context.Background(), "/user/alice/.xres/app1", files)
			require.NoError(t, err)
			require.Equal(t, 3, pfs.copies)
			second, err := s.Stage(context.Background(), "/user/alice/.xres/app2", files)
			require.NoError(t, err)
			require.Equal(t, 4, pfs.copies, "the second application uploads its configuration alone")
			for _, name := range []string{"am", "container-launcher"} {
				r := second.Resources[name]
				require.Equal(t, first.Resources[name], r, name)
				require.Equal(t, "/user/alice/.xres-shared", path.Dir(path.Dir(r.URL.File)), name)
				require.Equal(t, tc.want, r.Visibility, name)
			}
			require.Equal(t, "/user/alice/.xres/app2/flink-conf.yaml", second.Resources["flink-conf.yaml"].URL.File)
			require.Equal(t, yarn.Application, second.Resources["flink-conf.yaml"].Visibility)
		})
	}
}
