package conf

// Hadoop configuration: the *-site.xml files in $HADOOP_CONF_DIR (or
// $YARN_CONF_DIR), layered over the few defaults of core-default.xml and
// yarn-default.xml that a YARN client needs.
//
// A Hadoop configuration file looks like this:
//
//	<?xml version="1.0"?>
//	<configuration>
//	  <property>
//	    <name>yarn.resourcemanager.hostname</name>   trimmed
//	    <value>rm.example.com</value>                  kept verbatim, may hold ${var}
//	    <final>true</final>                            later files cannot override
//	  </property>
//	  <property name="k" value="v" final="true"/>      attribute form, same meaning
//	  <xi:include href="other.xml">                    XInclude, relative to this file
//	    <xi:fallback/>                                 missing file is then not an error
//	  </xi:include>
//	</configuration>
//
// Files are read in HadoopFiles order; a later file overrides an earlier one
// unless the earlier one marked the key final. Values are expanded when read
// (Get), not when loaded, so ${yarn.resourcemanager.hostname}:8032 follows a
// hostname set in a later file, as in Hadoop.

import (
	"github.com/xres/xres/conf/localfile"

	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"
)

// HadoopFiles are the files LoadHadoop reads from the configuration
// directory, in order: a key in a later file overrides an earlier one.
var HadoopFiles = []string{"core-site.xml", "hdfs-site.xml", "yarn-site.xml", "resource-types.xml"}

// Errors callers test for.
var (
	// ErrNoHadoopConf means neither an explicit directory nor
	// $HADOOP_CONF_DIR / $YARN_CONF_DIR names a configuration directory, or
	// the directory holds none of HadoopFiles.
	ErrNoHadoopConf = errors.New("no hadoop configuration")
	// ErrHadoopXML marks a malformed configuration file (in an *Error
	// naming file and line, matching ErrInvalid too).
	ErrHadoopXML = errors.New("malformed hadoop configuration")
	// ErrHadoopVar marks a ${var} that cannot be expanded: a cycle, or
	// nesting deeper than hadoopMaxSubst.
	ErrHadoopVar = errors.New("cannot expand hadoop variable")
	// ErrHadoopValue marks a value of the wrong type (GetBool, GetInt);
	// the error is an *Error, matching ErrInvalid too.
	ErrHadoopValue = errors.New("invalid hadoop configuration value")
)

// HadoopConfError is every error of loading a Hadoop configuration
// (LoadHadoopOptions): the directory and the variable that named it, and
// what is wrong (matching ErrNoHadoopConf, ErrHadoopXML, os.ErrNotExist…).
// It is a configuration problem of the caller's, not of the cluster: am
// exits 3 on it.
type HadoopConfError struct {
	Dir  string // the configuration directory; "" when none is named
	From string // the variable that named Dir (HADOOP_CONF_DIR, YARN_CONF_DIR); "" for an explicit one
	Err  error
}

// Error renders "load hadoop configuration DIR (from VAR): what".
func (e *HadoopConfError) Error() string {
	var b strings.Builder
	b.WriteString("load hadoop configuration")
	if e.Dir != "" {
		b.WriteString(" " + e.Dir)
	}
	if e.From != "" {
		b.WriteString(" (from " + e.From + ")")
	}
	return b.String() + ": " + e.Err.Error()
}

func (e *HadoopConfError) Unwrap() error { return e.Err }

// hadoopMaxSubst bounds ${var} nesting, as Hadoop's Configuration.MAX_SUBST.
const hadoopMaxSubst = 20

// hadoopMaxSubstitutions and hadoopMaxValue bound the work and the size of
// one expansion, so a value like ${a}${a} with a=${b}${b}… cannot explode.
const (
	hadoopMaxSubstitutions = 10000
	hadoopMaxValue         = 1 << 20
)

// hadoopMaxInclude bounds XInclude nesting.
const hadoopMaxInclude = 8

// Sources reported for values that did not come from a file.
const (
	HadoopSourceDefault = "default" // built into xres (core-default.xml / yarn-default.xml values)
	HadoopSourceSet     = "set"     // HadoopConfig.Set
)

// hadoopDefaults are the core-default.xml and yarn-default.xml values a YARN
// client relies on. Addresses are derived from the hostname keys, exactly as
// in yarn-default.xml, so setting only yarn.resourcemanager.hostname moves
// every RM address. An array of pairs, which the linker lays out, not a map
// literal, which the package's initialisation would build in every process
// that links conf (the launcher among them).
var hadoopDefaults = [...]struct{ name, value string }{
	{HadoopDefaultFS, "file:///"},
	{HadoopTmpDir, "/tmp/hadoop-${user.name}"},
	{HadoopSecurityAuthentication, "simple"},
	{HadoopRPCProtection, "authentication"},
	{HadoopHTTPStaticUser, "dr.who"},
	{HadoopHTTPAuthenticationType, "simple"},
	{HadoopYarnHTTPPolicy, "HTTP_ONLY"},
	{HadoopRMHostname, "0.0.0.0"},
	{HadoopRMAddress, "${yarn.resourcemanager.hostname}:8032"},
	{HadoopRMSchedulerAddress, "${yarn.resourcemanager.hostname}:8030"},
	{HadoopRMResourceTrackerAddress, "${yarn.resourcemanager.hostname}:8031"},
	{HadoopRMAdminAddress, "${yarn.resourcemanager.hostname}:8033"},
	{HadoopRMWebappAddress, "${yarn.resourcemanager.hostname}:8088"},
	{HadoopRMWebappHTTPSAddress, "${yarn.resourcemanager.hostname}:8090"},
	{HadoopRMHAEnabled, "false"},
	{HadoopRMConnectMaxWait, "900000"},
	{HadoopRMConnectRetryInterval, "30000"},
	{HadoopNMHostname, "0.0.0.0"},
	{HadoopNMAddress, "${yarn.nodemanager.hostname}:0"},
	{HadoopNMWebappAddress, "${yarn.nodemanager.hostname}:8042"},
	{HadoopNMWebappHTTPSAddress, "0.0.0.0:8044"},
}

// HadoopProperty is one <property> read from a configuration file.
type HadoopProperty struct {
	Name  string
	Value string // raw, before ${var} expansion
	Final bool
	File  string // the file it came from
	Line  int    // line of its <property> element
}

// Source returns "file:line" for the property.
func (p HadoopProperty) Source() string { return p.File + ":" + strconv.Itoa(p.Line) }

// HadoopOptions tune LoadHadoopOptions. The zero value behaves as LoadHadoop("").
type HadoopOptions struct {
	// Dir is the configuration directory; when empty, $HADOOP_CONF_DIR,
	// then $YARN_CONF_DIR.
	Dir string
	// Files overrides HadoopFiles (names relative to Dir).
	Files []string
	// Getenv reads the environment (nil: os.Getenv); it serves the
	// directory lookup, ${env.NAME} and ${user.name}.
	Getenv func(string) string
	// Log receives notices such as an ignored override of a final key
	// (nil: discard).
	Log logrus.FieldLogger
}

// HadoopConfig is a loaded Hadoop configuration: defaults, then files.
// It is safe for concurrent reads; Set must not race with reads.
type HadoopConfig struct {
	dir    string
	props  map[string]HadoopProperty
	getenv func(string) string
}

// NewHadoopConfig returns a configuration holding only the built-in
// defaults. getenv may be nil (os.Getenv).
func NewHadoopConfig(getenv func(string) string) *HadoopConfig {
	if getenv == nil {
		getenv = os.Getenv
	}
	hc := &HadoopConfig{props: make(map[string]HadoopProperty, len(hadoopDefaults)), getenv: getenv}
	for _, d := range hadoopDefaults {
		hc.props[d.name] = HadoopProperty{Name: d.name, Value: d.value, File: HadoopSourceDefault}
	}
	return hc
}

// LoadHadoop loads core-site.xml, hdfs-site.xml, yarn-site.xml and
// resource-types.xml from dir, or, when dir is empty, from $HADOOP_CONF_DIR,
// else $YARN_CONF_DIR. Missing files are skipped, but at least one must
// exist. Errors name the file and line.
func LoadHadoop(dir string) (*HadoopConfig, error) {
	return LoadHadoopOptions(HadoopOptions{Dir: dir})
}

// LoadHadoopOptions is LoadHadoop with injectable environment and logger.
func LoadHadoopOptions(o HadoopOptions) (*HadoopConfig, error) {
	hc := NewHadoopConfig(o.Getenv)
	log := o.Log
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = l
	}
	dir, from := o.Dir, ""
	if dir == "" {
		dir, from = hc.getenv("HADOOP_CONF_DIR"), "HADOOP_CONF_DIR"
	}
	if dir == "" {
		dir, from = hc.getenv("YARN_CONF_DIR"), "YARN_CONF_DIR"
	}
	fail := func(err error) (*HadoopConfig, error) {
		return nil, &HadoopConfError{Dir: dir, From: from, Err: err}
	}
	if dir == "" {
		from = ""
		return fail(fmt.Errorf("%w: set HADOOP_CONF_DIR or YARN_CONF_DIR", ErrNoHadoopConf))
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fail(err)
	}
	if !st.IsDir() {
		return fail(errors.New("not a directory"))
	}
	hc.dir = dir
	files := o.Files
	if files == nil {
		files = HadoopFiles
	}
	found := 0
	for _, name := range files {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			continue
		}
		props, err := readHadoopFile(path, 0)
		if err != nil {
			return fail(err)
		}
		found++
		for _, p := range props {
			if prev, ok := hc.props[p.Name]; ok && prev.Final {
				log.WithFields(logrus.Fields{"key": p.Name, "final_at": prev.Source(), "ignored_at": p.Source()}).
					Warn("hadoop configuration: ignoring override of a final key")
				continue
			}
			hc.props[p.Name] = p
		}
	}
	if found == 0 {
		return fail(fmt.Errorf("%w: none of %s", ErrNoHadoopConf, strings.Join(files, ", ")))
	}
	return hc, nil
}

// Dir returns the directory the configuration was loaded from ("" for
// NewHadoopConfig).
func (hc *HadoopConfig) Dir() string { return hc.dir }

// Set sets key to a raw value (expanded on read), overriding files and
// final markers. It is for programmatic overrides such as -D flags.
func (hc *HadoopConfig) Set(key, value string) {
	hc.props[key] = HadoopProperty{Name: key, Value: value, File: HadoopSourceSet}
}

// Clone returns a copy that Set and ApplyFlink change without changing hc.
func (hc *HadoopConfig) Clone() *HadoopConfig {
	c := *hc
	c.props = maps.Clone(hc.props)
	return &c
}

// Flink's prefixes for Hadoop keys in its own configuration: flink.hadoop.<key> sets <key>,
// flink.yarn.<key> sets yarn.<key> (Flink strips "flink." there).
const (
	FlinkHadoopPrefix = "flink.hadoop."
	FlinkYarnPrefix   = "flink.yarn."
)

// ApplyFlink sets the Hadoop keys that cfg names through Flink's flink.hadoop.* and
// flink.yarn.* prefixes over what the files say (final keys included, as Hadoop's
// Configuration.set does), flink.yarn.* last as in Flink. Each one's source names the Flink
// key and where it was set. It returns the Hadoop keys set, sorted.
func (hc *HadoopConfig) ApplyFlink(cfg *Config) []string {
	return hc.ApplyProperties(FlinkHadoopProperties(cfg))
}

// FlinkHadoopProperties are the Hadoop keys cfg sets through flink.hadoop.<key> (sets
// <key>) and flink.yarn.<key> (sets yarn.<key>), in the order Flink applies them:
// flink.hadoop.* first, flink.yarn.* last. Each one's File names the Flink key and where it
// was set.
func FlinkHadoopProperties(cfg *Config) []HadoopProperty {
	var out []HadoopProperty
	add := func(key, flinkKey string) {
		v, _ := cfg.Get(flinkKey)
		src := flinkKey
		if o := cfg.Origin(flinkKey); o != "" {
			src += " at " + o
		}
		out = append(out, HadoopProperty{Name: key, Value: v, File: src})
	}
	for _, k := range cfg.Keys() {
		if rest, ok := strings.CutPrefix(k, FlinkHadoopPrefix); ok && rest != "" {
			add(rest, k)
		}
	}
	for _, k := range cfg.Keys() {
		if rest, ok := strings.CutPrefix(k, FlinkYarnPrefix); ok && rest != "" {
			add("yarn."+rest, k)
		}
	}
	return out
}

// ApplyProperties sets each property over what the files say (final keys included), in
// order, as ApplyFlink does with FlinkHadoopProperties. It returns the keys set, sorted.
func (hc *HadoopConfig) ApplyProperties(ps []HadoopProperty) []string {
	var set []string
	for _, p := range ps {
		hc.props[p.Name] = HadoopProperty{Name: p.Name, Value: p.Value, File: p.File}
		set = append(set, p.Name)
	}
	sort.Strings(set)
	return slices.Compact(set)
}

// Raw returns the value of key before ${var} expansion.
func (hc *HadoopConfig) Raw(key string) (string, bool) {
	p, ok := hc.props[key]
	return p.Value, ok
}

// Get returns the value of key with ${var} references expanded, and whether
// the key is set (in a file or by default). A reference that cannot be
// resolved stays as written, as in Hadoop; a cycle is reported by Lookup and
// makes Get return the raw value.
func (hc *HadoopConfig) Get(key string) (string, bool) {
	v, ok, err := hc.Lookup(key)
	if err != nil {
		raw, _ := hc.Raw(key)
		return raw, true
	}
	return v, ok
}

// Lookup is Get that also reports expansion errors (ErrHadoopVar), naming
// the key and the chain of references.
func (hc *HadoopConfig) Lookup(key string) (string, bool, error) {
	p, ok := hc.props[key]
	if !ok {
		return "", false, nil
	}
	budget := hadoopMaxSubstitutions
	v, err := hc.expand(p.Value, []string{key}, &budget)
	if err != nil {
		return "", true, fmt.Errorf("hadoop configuration key %s (%s): %w", key, p.Source(), err)
	}
	return v, true, nil
}

// GetDefault returns Get(key), or def when the key is not set.
func (hc *HadoopConfig) GetDefault(key, def string) string {
	if v, ok := hc.Get(key); ok {
		return v
	}
	return def
}

// GetBool parses key as a Hadoop boolean ("true"/"false", any case,
// surrounding space ignored); def when unset.
func (hc *HadoopConfig) GetBool(key string, def bool) (bool, error) {
	v, ok, err := hc.Lookup(key)
	if err != nil || !ok {
		return def, err
	}
	b, perr := ParseBool(v)
	if perr != nil {
		return def, hc.valueError(key, fmt.Errorf("%w: %q is not true or false", ErrHadoopValue, v))
	}
	return b, nil
}

// GetInt parses key as a decimal integer; def when unset.
func (hc *HadoopConfig) GetInt(key string, def int64) (int64, error) {
	v, ok, err := hc.Lookup(key)
	if err != nil || !ok {
		return def, err
	}
	n, perr := ParseInt64(v)
	if perr != nil {
		return def, hc.valueError(key, fmt.Errorf("%w: %q is not an integer", ErrHadoopValue, v))
	}
	return n, nil
}

// GetStrings splits key on commas, trims each part and drops empty ones, as
// Configuration.getTrimmedStrings; nil when unset.
func (hc *HadoopConfig) GetStrings(key string) []string {
	v, ok := hc.Get(key)
	if !ok {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Source says where key's value comes from: "path:line" for a file,
// HadoopSourceDefault or HadoopSourceSet; false when unset.
func (hc *HadoopConfig) Source(key string) (string, bool) {
	p, ok := hc.props[key]
	if !ok {
		return "", false
	}
	if p.Line == 0 {
		return p.File, true
	}
	return p.Source(), true
}

// valueError is a *Error about key's value (matching ErrInvalid), naming
// its file and line.
func (hc *HadoopConfig) valueError(key string, err error) error {
	e := ErrorAt(key, hc.sourceOf(key), err)
	e.hadoop = true
	return e
}

// sourceOf is Source for messages.
func (hc *HadoopConfig) sourceOf(key string) string {
	s, _ := hc.Source(key)
	return s
}

// Final reports whether a file marked key final.
func (hc *HadoopConfig) Final(key string) bool { return hc.props[key].Final }

// Keys lists every set key, defaults included, sorted.
func (hc *HadoopConfig) Keys() []string {
	keys := make([]string, 0, len(hc.props))
	for k := range hc.props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// expand replaces ${name} references in s, innermost first and rescanning
// after each substitution as Hadoop does, so ${env.X:-${other.key}} works.
// chain holds the keys being expanded (outermost first) to detect cycles
// and bound depth.
func (hc *HadoopConfig) expand(s string, chain []string, budget *int) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	if len(chain) > hadoopMaxSubst {
		return "", fmt.Errorf("%w: more than %d nested references: %s", ErrHadoopVar, hadoopMaxSubst, strings.Join(chain, " -> "))
	}
	var done strings.Builder // final text: no reference left to resolve
	for {
		open := strings.Index(s, "${")
		if open < 0 {
			break
		}
		closing := strings.IndexByte(s[open:], '}')
		if closing < 0 {
			break
		}
		closing += open
		i := strings.LastIndex(s[:closing], "${") // innermost reference
		*budget--
		if *budget < 0 || len(s) > hadoopMaxValue {
			return "", fmt.Errorf("%w: expansion too large (over %d substitutions or %d bytes): %s", ErrHadoopVar, hadoopMaxSubstitutions, hadoopMaxValue, strings.Join(chain, " -> "))
		}
		v, ok, err := hc.resolve(s[i+2:closing], chain, budget)
		if err != nil {
			return "", err
		}
		if !ok {
			// Unknown: keep it, and what encloses it, as written.
			done.WriteString(s[:closing+1])
			s = s[closing+1:]
			continue
		}
		s = s[:i] + v + s[closing+1:]
	}
	done.WriteString(s)
	return done.String(), nil
}

// resolve looks up one ${name}: env.NAME (with :-default and -default), then
// another key, then the system-like variables Hadoop's Java side has.
func (hc *HadoopConfig) resolve(name string, chain []string, budget *int) (string, bool, error) {
	if env, ok := strings.CutPrefix(name, "env."); ok {
		return hc.resolveEnv(env, chain, budget)
	}
	if p, ok := hc.props[name]; ok {
		for _, c := range chain {
			if c == name {
				return "", false, fmt.Errorf("%w: cycle %s -> %s", ErrHadoopVar, strings.Join(chain, " -> "), name)
			}
		}
		v, err := hc.expand(p.Value, append(chain[:len(chain):len(chain)], name), budget)
		return v, err == nil, err
	}
	switch name {
	case "user.name":
		if u := hc.getenv("USER"); u != "" {
			return u, true, nil
		}
		if u, err := user.Current(); err == nil {
			return u.Username, true, nil
		}
	case "user.home":
		if h := hc.getenv("HOME"); h != "" {
			return h, true, nil
		}
	case "java.io.tmpdir":
		return os.TempDir(), true, nil
	}
	return "", false, nil
}

// resolveEnv serves ${env.NAME}, ${env.NAME:-def} and ${env.NAME-def}. The
// injected getenv cannot tell an empty variable from an unset one, so both
// forms use the default for an empty value.
func (hc *HadoopConfig) resolveEnv(spec string, chain []string, budget *int) (string, bool, error) {
	name, def, hasDef := spec, "", false
	if i := strings.Index(spec, ":-"); i >= 0 {
		name, def, hasDef = spec[:i], spec[i+2:], true
	} else if i := strings.IndexByte(spec, '-'); i >= 0 {
		name, def, hasDef = spec[:i], spec[i+1:], true
	}
	if v := hc.getenv(name); v != "" {
		return v, true, nil
	}
	if !hasDef {
		return "", false, nil
	}
	d, err := hc.expand(def, chain, budget)
	return d, err == nil, err
}

// ReadHadoopXML parses one configuration document. name labels errors and
// HadoopProperty.File. XInclude elements are not followed here (they need a
// directory); LoadHadoop follows them.
func ReadHadoopXML(r io.Reader, name string) ([]HadoopProperty, error) {
	return parseHadoopXML(r, name, nil)
}

func readHadoopFile(path string, depth int) ([]HadoopProperty, error) {
	data, err := localfile.ReadRegular(path, MaxFileSize)
	if err != nil {
		return nil, err
	}
	include := func(href string, fallback bool) ([]HadoopProperty, error) {
		if depth >= hadoopMaxInclude {
			return nil, &Error{File: path, Err: fmt.Errorf("%w: includes nested deeper than %d", ErrHadoopXML, hadoopMaxInclude)}
		}
		target := href
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), strings.TrimPrefix(href, "file:"))
		}
		props, err := readHadoopFile(target, depth+1)
		if errors.Is(err, os.ErrNotExist) && fallback {
			return nil, nil
		}
		return props, err
	}
	return parseHadoopXML(bytes.NewReader(data), path, include)
}

const xincludeNS = "http://www.w3.org/2001/XInclude"

type hadoopIncludeFunc func(href string, fallback bool) ([]HadoopProperty, error)

// parseHadoopXML walks the token stream (rather than unmarshalling) so that
// every property keeps its line number.
func parseHadoopXML(r io.Reader, name string, include hadoopIncludeFunc) ([]HadoopProperty, error) {
	dec := xml.NewDecoder(r)
	dec.CharsetReader = hadoopCharsetReader
	fail := func(format string, args ...any) error {
		line, _ := dec.InputPos()
		return &Error{File: name, Line: line, Err: fmt.Errorf("%w: %s", ErrHadoopXML, fmt.Sprintf(format, args...))}
	}
	var (
		props    []HadoopProperty
		path     []string // open element local names
		cur      *HadoopProperty
		hasValue bool
		field    string // name/value/final child being read
		text     strings.Builder
		sawRoot  bool
		incHref  string
		incFall  bool
		inInc    bool
		incLine  int
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			line, _ := dec.InputPos()
			return nil, &Error{File: name, Line: line, Err: fmt.Errorf("%w: %v", ErrHadoopXML, err)}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			local := t.Name.Local
			switch {
			case len(path) == 0:
				if local != "configuration" {
					return nil, fail("root element is <%s>, want <configuration>", local)
				}
				sawRoot = true
			case len(path) == 1 && local == "property":
				line, _ := dec.InputPos()
				cur = &HadoopProperty{File: name, Line: line}
				hasValue = false
				for _, a := range t.Attr {
					switch a.Name.Local {
					case "name":
						cur.Name = strings.TrimSpace(a.Value)
					case "value":
						cur.Value, hasValue = a.Value, true
					case "final":
						cur.Final = strings.TrimSpace(a.Value) == "true"
					}
				}
			case len(path) == 1 && local == "include" && (t.Name.Space == xincludeNS || t.Name.Space == "xi"):
				inInc, incFall, incHref = true, false, ""
				incLine, _ = dec.InputPos()
				for _, a := range t.Attr {
					if a.Name.Local == "href" {
						incHref = a.Value
					}
				}
			case len(path) == 2 && inInc && local == "fallback":
				incFall = true
			case len(path) == 2 && cur != nil:
				switch local {
				case "name", "value", "final":
					field = local
					text.Reset()
				}
			}
			path = append(path, local)
		case xml.CharData:
			if field != "" {
				text.Write(t)
			}
		case xml.EndElement:
			path = path[:len(path)-1]
			switch {
			case len(path) == 2 && field != "":
				switch field {
				case "name":
					cur.Name = strings.TrimSpace(text.String())
				case "value":
					cur.Value, hasValue = text.String(), true
				case "final":
					cur.Final = strings.TrimSpace(text.String()) == "true"
				}
				field = ""
			case len(path) == 1 && cur != nil:
				if cur.Name == "" {
					return nil, &Error{File: name, Line: cur.Line, Err: fmt.Errorf("%w: <property> without a <name>", ErrHadoopXML)}
				}
				// Hadoop ignores a property without a value.
				if hasValue {
					props = append(props, *cur)
				}
				cur = nil
			case len(path) == 1 && inInc:
				inInc = false
				if incHref == "" {
					return nil, &Error{File: name, Line: incLine, Err: fmt.Errorf("%w: <include> without href", ErrHadoopXML)}
				}
				if include == nil {
					continue
				}
				inc, err := include(incHref, incFall)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: include %s: %w", name, incLine, incHref, err)
				}
				props = append(props, inc...)
			}
		}
	}
	if !sawRoot {
		return nil, &Error{File: name, Err: fmt.Errorf("%w: no <configuration> element", ErrHadoopXML)}
	}
	return props, nil
}

// hadoopCharsetReader accepts the encodings Hadoop files declare in
// practice; anything else is an error naming the charset.
func hadoopCharsetReader(charset string, input io.Reader) (io.Reader, error) {
	switch strings.ToLower(charset) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return input, nil
	case "iso-8859-1", "latin1", "latin-1":
		data, err := io.ReadAll(input)
		if err != nil {
			return nil, err
		}
		runes := make([]rune, len(data))
		for i, c := range data {
			runes[i] = rune(c)
		}
		return strings.NewReader(string(runes)), nil
	}
	return nil, fmt.Errorf("unsupported encoding %q", charset)
}
