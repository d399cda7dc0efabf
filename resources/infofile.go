package resources

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

	"github.com/xres/xres/conf/rawio"
	"github.com/xres/xres/resources/jsonlite"
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
type InfoFile map[string][]Properties

// Infos returns the devices of the named resource, the counterpart of
// Flink's RuntimeContext#getExternalResourceInfos: empty (never nil) for
// a name the worker was not given.
func (f InfoFile) Infos(name string) []Info {
	list := f[name]
	out := make([]Info, len(list))
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
func WriteInfoFile(path string, infos map[string][]Info) error {
	if err := writeAtomic(path, MarshalInfoFile(infos)); err != nil {
		return fmt.Errorf("write resource info file %s: %w", path, err)
	}
	return nil
}

// MarshalInfoFile is the info file's content for infos: what
// WriteInfoFile writes, for a caller that writes a fresh file of its own
// (one nobody else can know of before it is complete).
func MarshalInfoFile(infos map[string][]Info) []byte {
	return appendInfoFile(make([]byte, 0, 512), infos)
}

// appendInfoFile writes what json.MarshalIndent(InfoFile, "", "  ") writes,
// and a newline, by hand (jsonlite: a launcher writes it on every start).
func appendInfoFile(b []byte, infos map[string][]Info) []byte {
	if len(infos) == 0 {
		return append(b, "{}\n"...)
	}
	b = append(b, "{\n"...)
	for i, name := range slices.Sorted(maps.Keys(infos)) {
		if i > 0 {
			b = append(b, ",\n"...)
		}
		b = append(b, "  "...)
		b = jsonlite.AppendString(b, name)
		b = append(b, ": "...)
		list := PropertiesOf(infos[name])
		if len(list) == 0 {
			b = append(b, "[]"...)
			continue
		}
		b = append(b, "[\n"...)
		for j, p := range list {
			if j > 0 {
				b = append(b, ",\n"...)
			}
			b = append(b, "    "...)
			if len(p) == 0 {
				b = append(b, "{}"...)
				continue
			}
			b = append(b, "{\n"...)
			for k, key := range slices.Sorted(maps.Keys(p)) {
				if k > 0 {
					b = append(b, ",\n"...)
				}
				b = append(b, "      "...)
				b = jsonlite.AppendString(b, key)
				b = append(b, ": "...)
				b = jsonlite.AppendString(b, p[key])
			}
			b = append(b, "\n    }"...)
		}
		b = append(b, "\n  ]"...)
	}
	return append(b, "\n}\n"...)
}

// writeAtomic writes data to path through a temporary file in the same
// directory, renamed over path, mode 0644. It is not fsync'ed: the file
// tells one worker (or executor) what it was given, and no worker outlives
// a crash of its host; the rename alone keeps readers from a half-written
// file, and its launcher writes it again when the container is restarted.
func writeAtomic(path string, data []byte) error {
	tmp, err := rawio.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
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
			f[name] = []Properties{}
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
