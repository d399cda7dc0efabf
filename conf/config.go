package conf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// File names Flink looks for in its configuration directory.
const (
	// FileNested is Flink 1.19+'s standard-YAML configuration file.
	FileNested = "config.yaml"
	// FileFlat is Flink's legacy flat configuration file.
	FileFlat = "flink-conf.yaml"
	// EnvConfDir names the directory Find looks in when no --conf is given.
	EnvConfDir = "FLINK_CONF_DIR"
)

// Origins of values that did not come from a file.
const (
	OriginDynamic = "-D"  // a -D key=value override given to Load
	OriginSet     = "set" // Config.Set
)

// MaxFileSize bounds every configuration file xres reads (Flink's, Spark's,
// Hadoop's XML, the dynamic file): a larger one, or one that is not a
// regular file (--conf /dev/zero, a FIFO), is refused naming the file
// before anything is read, instead of being read without end.
const MaxFileSize = 16 << 20

// Errors callers test for.
var (
	// ErrConfNotFound means a configuration file asked for (--conf) does
	// not exist.
	ErrConfNotFound = errors.New("flink configuration not found")
	// ErrSyntax marks a malformed configuration file or -D argument.
	ErrSyntax = errors.New("malformed flink configuration")
)

// Warning is a line of the configuration file that Flink skips with a
// WARN, or that sets a key set before.
type Warning struct {
	File    string
	Line    int
	Message string
	Fix     string // how to fix it; "" for the usual (write "key: value")
}

// String renders the warning as "file:line: message".
func (w Warning) String() string {
	return fmt.Sprintf("%s:%d: %s", w.File, w.Line, w.Message)
}

type entry struct {
	value  string
	origin string
}

// Config is a loaded Flink configuration: flat keys with string values,
// each remembering where it came from. The zero value and nil are empty
// configurations. A Config is not safe for concurrent mutation.
type Config struct {
	path     string
	entries  map[string]entry
	warnings []Warning
}

// New returns an empty configuration.
func New() *Config { return &Config{entries: map[string]entry{}} }

// Load reads the Flink configuration file at path (none when path is "")
// and applies the dynamic overrides, each "key=value" (a leading "-D" is
// accepted), which win over the file. The format follows the file name (see
// the package documentation).
func Load(path string, dynamic []string) (*Config, error) {
	c := New()
	if path != "" {
		data, err := readConfigFile("flink", path)
		if err != nil {
			return nil, err
		}
		c.path = path
		var kvs []keyValue
		if IsNested(path) {
			kvs, c.warnings, err = parseNested(path, data)
		} else {
			kvs, c.warnings, err = parseFlat(path, data)
		}
		if err != nil {
			return nil, err
		}
		for _, kv := range kvs {
			c.entries[kv.key] = entry{value: kv.value, origin: path + ":" + strconv.Itoa(kv.line)}
		}
	}
	for _, d := range dynamic {
		k, v, err := ParseDynamic(d)
		if err != nil {
			return nil, err
		}
		c.entries[k] = entry{value: v, origin: OriginDynamic}
	}
	return c, nil
}

// IsNested reports whether the file at path is read as standard (nested)
// YAML: true for a file named config.yaml, as in Flink 1.19+.
func IsNested(path string) bool { return filepath.Base(path) == FileNested }

// ParseDynamic splits one -D override, "key=value" or "-Dkey=value", at its
// first '='. Key and value are trimmed; the value may be empty.
func ParseDynamic(arg string) (key, value string, err error) {
	s := strings.TrimPrefix(arg, "-D")
	k, v, ok := strings.Cut(s, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		// The argument may hold a secret: name only what is safe. A -D
		// written with a space ("-D some.password hunter2") gets here with
		// the key alone; the value, the next argument, is never named.
		return "", "", fmt.Errorf("parse -D override %q: %w: want key=value (no space around '=')", redactArg(s), ErrSyntax)
	}
	return k, strings.TrimSpace(v), nil
}

// Find locates the Flink configuration file. confFlag (the --conf flag) may
// name a file or a directory; it wins and must exist. Without it, the
// directory $FLINK_CONF_DIR is searched for config.yaml, then
// flink-conf.yaml. It returns "" and no error when nothing was asked for and
// nothing was found: the configuration is then empty. getenv nil means
// os.Getenv.
func Find(confFlag string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if confFlag != "" {
		st, err := os.Stat(confFlag)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("find flink configuration %s: %w", confFlag, ErrConfNotFound)
			}
			return "", fmt.Errorf("find flink configuration %s: %w", confFlag, err)
		}
		if !st.IsDir() {
			return confFlag, nil
		}
		if p := findInDir(confFlag); p != "" {
			return p, nil
		}
		return "", fmt.Errorf("find flink configuration in %s: %w: neither %s nor %s exists",
			confFlag, ErrConfNotFound, FileNested, FileFlat)
	}
	if dir := getenv(EnvConfDir); dir != "" {
		return findInDir(dir), nil
	}
	return "", nil
}

func findInDir(dir string) string {
	for _, name := range []string{FileNested, FileFlat} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// Path is the file the configuration was loaded from, "" if none.
func (c *Config) Path() string {
	if c == nil {
		return ""
	}
	return c.path
}

// Warnings lists the file lines skipped while loading, in file order.
func (c *Config) Warnings() []Warning {
	if c == nil {
		return nil
	}
	return append([]Warning(nil), c.warnings...)
}

// Get returns the raw value of key and whether it is set.
func (c *Config) Get(key string) (string, bool) {
	if c == nil {
		return "", false
	}
	e, ok := c.entries[key]
	return e.value, ok
}

// Origin says where key's value came from: "file:line", "-D" or "set";
// "" when key is not set.
func (c *Config) Origin(key string) string {
	if c == nil {
		return ""
	}
	return c.entries[key].origin
}

// Keys lists every set key, sorted.
func (c *Config) Keys() []string {
	if c == nil {
		return nil
	}
	keys := make([]string, 0, len(c.entries))
	for k := range c.entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WithPrefix returns the keys starting with prefix, with the prefix
// stripped, and their values: Flink's DelegatingConfiguration view, e.g.
// WithPrefix("external-resource.gpu.param.") for a driver's parameters.
func (c *Config) WithPrefix(prefix string) map[string]string {
	out := map[string]string{}
	if c == nil {
		return out
	}
	for k, e := range c.entries {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out[rest] = e.value
		}
	}
	return out
}

// Set sets key programmatically; its origin is "set". It wins over the
// file and -D.
func (c *Config) Set(key, value string) {
	if c.entries == nil {
		c.entries = map[string]entry{}
	}
	c.entries[key] = entry{value: value, origin: OriginSet}
}

// keyValue is one key read from a file, with its line.
type keyValue struct {
	key, value string
	line       int
}
