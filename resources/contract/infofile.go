package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/xres/xres/conf/localfile"
	"github.com/xres/xres/resources"
	"github.com/xres/xres/resources/jsonfile"
)

// EnvResourcesFile names the environment variable that holds the path of
// the info file, set by container-launcher for the worker.
const EnvResourcesFile = "XRES_RESOURCES_FILE"

// ErrNoInfoFile means EnvResourcesFile is not set: the process was not
// started by container-launcher.
var ErrNoInfoFile = errors.New(EnvResourcesFile + " is not set")

// InfoFile is what a worker was given: resource name → one property map
// per device. On disk it is a JSON object:
//
//	{
//	  "gpu":  [ {"index": "0", "uuid": "GPU-5a1c…"},     one object per device,
//	            {"index": "1", "uuid": "GPU-77e0…"} ],   string values only
//	  "fpga": [ ]                                         enabled, none found
//	}
type InfoFile map[string][]resources.Properties

// Infos returns the devices of the named resource, the counterpart of
// Flink's RuntimeContext#getExternalResourceInfos: empty (never nil) for
// a name the worker was not given.
func (f InfoFile) Infos(name string) []resources.Info {
	list := f[name]
	out := make([]resources.Info, len(list))
	for i, p := range list {
		out[i] = p
	}
	return out
}

// Names lists the resources in the file, sorted.
func (f InfoFile) Names() []string {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// WriteInfoFile writes infos to path atomically (a temporary file in the
// same directory, renamed over path) with mode 0644, so a reader never sees
// a half-written file.
func WriteInfoFile(path string, infos map[string][]resources.Info) error {
	if err := localfile.WriteFileAtomic(path, MarshalInfoFile(infos), 0o644); err != nil {
		return fmt.Errorf("write resource info file %s: %w", path, err)
	}
	return nil
}

// MarshalInfoFile is the info file's content for infos: what
// WriteInfoFile writes, for a caller that writes a fresh file of its own
// (one nobody else can know of before it is complete).
func MarshalInfoFile(infos map[string][]resources.Info) []byte {
	return appendInfoFile(make([]byte, 0, 512), infos)
}

// appendInfoFile writes what json.MarshalIndent(InfoFile, "", "  ") writes,
// and a newline, by hand (jsonfile: a launcher writes it on every start).
func appendInfoFile(b []byte, infos map[string][]resources.Info) []byte {
	names := slices.Sorted(maps.Keys(infos))
	b = appendIndented(b, '{', '}', len(names), "", func(b []byte, i int, indent string) []byte {
		name := names[i]
		b = append(jsonfile.AppendString(b, name), ": "...)
		list := resources.PropertiesOf(infos[name])
		return appendIndented(b, '[', ']', len(list), indent, func(b []byte, j int, indent string) []byte {
			p := list[j]
			keys := slices.Sorted(maps.Keys(p))
			return appendIndented(b, '{', '}', len(keys), indent, func(b []byte, k int, _ string) []byte {
				b = append(jsonfile.AppendString(b, keys[k]), ": "...)
				return jsonfile.AppendString(b, p[keys[k]])
			})
		})
	})
	return append(b, '\n')
}

// appendIndented writes n members between open and close as MarshalIndent
// does with an indent of two spaces: each on its own line, one level deeper
// than indent ("{}" or "[]" when there are none); member writes member i,
// given its own indentation for what it opens.
func appendIndented(b []byte, open, close byte, n int, indent string, member func(b []byte, i int, indent string) []byte) []byte {
	b = append(b, open)
	if n == 0 {
		return append(b, close)
	}
	inner := indent + "  "
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(b, '\n'), inner...)
		b = member(b, i, inner)
	}
	b = append(append(b, '\n'), indent...)
	return append(b, close)
}

// CreateInfoFile writes infos to a new info file in dir, named
// xres-resources-<pid>-<pid namespace>-*.json after the calling process
// (the launcher, which removes it after its worker), and returns its path.
// The file is fresh (O_EXCL, mode 0600: the worker runs as the launcher's
// user) and nobody else knows of it before the worker is told its name, so
// it is written in place; on an error nothing is left behind. A launcher
// killed with SIGKILL cannot remove its file: RemoveStaleInfoFiles, which
// the launcher runs beside its launch, removes those of launchers that are
// gone.
func CreateInfoFile(dir string, infos map[string][]resources.Info) (string, error) {
	ns := pidNamespace()
	f, err := localfile.CreateTemp(dir, fmt.Sprintf("%s%d-%s-*.json", infoFilePrefix, os.Getpid(), ns))
	if err != nil {
		return "", fmt.Errorf("create info file in %s: %w", dir, err)
	}
	p := f.Name()
	_, werr := f.Write(MarshalInfoFile(infos))
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = os.Remove(p)
		return "", fmt.Errorf("write info file %s: %w", p, err)
	}
	return p, nil
}

// infoFilePrefix begins the name of CreateInfoFile's files.
const infoFilePrefix = "xres-resources-"

// pidNamespace is this process's pid namespace as a number ("0" where
// unknown): a pid in a file name means something only in it.
func pidNamespace() string {
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "0"
	}
	l = strings.TrimSuffix(strings.TrimPrefix(l, "pid:["), "]")
	if _, err := strconv.ParseUint(l, 10, 64); err != nil {
		return "0"
	}
	return l
}

// RemoveStaleInfoFiles removes the info files CreateInfoFile made in dir
// for launchers of this pid namespace that no longer run: regular files of
// this user only (never followed through a link), named with a pid that
// kill(pid, 0) does not find. It reads the whole folder ($TMPDIR): the
// launcher runs it beside its launch, which does not wait for it.
func RemoveStaleInfoFiles(dir string) {
	removeStaleInfoFiles(dir, pidNamespace())
}

func removeStaleInfoFiles(dir, ns string) {
	names, err := filepath.Glob(filepath.Join(dir, infoFilePrefix+"*-"+ns+"-*.json"))
	if err != nil || ns == "0" {
		return
	}
	uid := os.Geteuid()
	for _, name := range names {
		rest := strings.TrimPrefix(filepath.Base(name), infoFilePrefix)
		pidText, after, ok := strings.Cut(rest, "-")
		if !ok || !strings.HasPrefix(after, ns+"-") {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		fi, err := os.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			_ = os.Remove(name)
		}
	}
}

// ReadInfoFile reads the info file at path.
func ReadInfoFile(path string) (InfoFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read resource info file %s: %w", path, err)
	}
	f, err := ParseInfoFile(data)
	if err != nil {
		return nil, fmt.Errorf("read resource info file %s: %w", path, err)
	}
	return f, nil
}

// ParseInfoFile decodes the info file format. Anything but an object of
// lists of string-valued objects is an error.
func ParseInfoFile(data []byte) (InfoFile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var f InfoFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("decode resource infos: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("decode resource infos: data after the JSON object")
	}
	if f == nil {
		return nil, fmt.Errorf("decode resource infos: want a JSON object, got null")
	}
	for name, list := range f {
		for i, p := range list {
			if p == nil {
				return nil, fmt.Errorf("decode resource infos: %s[%d] is null", name, i)
			}
		}
		if list == nil {
			f[name] = []resources.Properties{}
		}
	}
	return f, nil
}

// FromEnv reads the info file named by $XRES_RESOURCES_FILE: what a worker
// started by container-launcher calls to learn its devices.
func FromEnv() (InfoFile, error) {
	path := os.Getenv(EnvResourcesFile)
	if path == "" {
		return nil, fmt.Errorf("read resource info file: %w (not started by container-launcher?)", ErrNoInfoFile)
	}
	return ReadInfoFile(path)
}
