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
	"unicode"

	"github.com/xres/xres/conf/factoryname"

	"github.com/xres/xres/conf/localfile"
)

// Spark's configuration, read as a second front-end: the executor resource
// keys of Spark 3.5 (ResourceUtils, the YARN and Kubernetes resource docs)
// mapped onto the same external-resource.<name>.* keys a Flink
// configuration sets, so that everything after the loader is shared.
const (
	// SparkDefaultsFile is the file spark-submit reads in $SPARK_CONF_DIR.
	SparkDefaultsFile = "spark-defaults.conf"
	// EnvSparkConfDir names Spark's configuration directory.
	EnvSparkConfDir = "SPARK_CONF_DIR"
	// OriginSparkConf is the origin of a value given as --conf key=value.
	OriginSparkConf = "--conf"
)

// Spark's keys (Spark 3.5).
const (
	SparkExecutorResourcePrefix = "spark.executor.resource."      // <r>.amount, <r>.discoveryScript, <r>.vendor
	SparkYarnExecutorPrefix     = "spark.yarn.executor.resource." // <yarn type>.amount
	SparkYarnGPUDeviceName      = "spark.yarn.resourceGpuDeviceName"
	SparkYarnFPGADeviceName     = "spark.yarn.resourceFpgaDeviceName"
	sparkAmount                 = "amount"
	sparkDiscoveryScript        = "discoveryScript"
	sparkVendor                 = "vendor"
)

// What a Spark resource becomes on the Flink side: the GPU driver runs a
// discovery script in Spark's protocol (or discovers NVIDIA GPUs itself),
// the AMD GPU driver serves vendor amd.com. The param names are the
// drivers' (driver/gpu, driver/launch); driver/builtin's tests check that
// they are declared there.
const (
	sparkFactoryGPU     = factoryname.GPUFlink
	sparkFactoryAMD     = factoryname.AMDGPU
	sparkParamScript    = "discovery-script.path"
	sparkParamProtocol  = "discovery-script.protocol"
	sparkParamVendorEnv = "visible-devices.vendor"
)

// SparkFlinkParams lists the driver params FromSpark may set, for the
// drivers' tests.
func SparkFlinkParams() []string {
	return []string{sparkParamScript, sparkParamProtocol, sparkParamVendorEnv}
}

// ErrSpark is wrapped by every error about a Spark configuration that Spark
// itself would refuse.
var ErrSpark = errors.New("invalid spark configuration")

// FindSpark returns $SPARK_CONF_DIR/spark-defaults.conf when it exists, ""
// otherwise. getenv nil means os.Getenv.
func FindSpark(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if dir := getenv(EnvSparkConfDir); dir != "" {
		p := filepath.Join(dir, SparkDefaultsFile)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// LoadSpark reads a spark-defaults.conf (none when path is "") and
// spark-submit's --conf key=value overrides, which win, into a Config of
// Spark's own keys; each value remembers its origin ("file:line" or
// "--conf"). As spark-submit does, keys not starting with "spark." are
// ignored with a warning, and values are trimmed.
func LoadSpark(path string, overrides []string) (*Config, error) {
	c := New()
	if path != "" {
		data, err := readConfigFile("spark", path)
		if err != nil {
			return nil, err
		}
		c.path = path
		kvs := parseProperties(data)
		for _, kv := range kvs {
			if !strings.HasPrefix(kv.key, "spark.") {
				c.warnings = append(c.warnings, Warning{File: path, Line: kv.line, Message: "not a spark.* key; spark-submit ignores it"})
				continue
			}
			c.entries[kv.key] = entry{value: strings.TrimSpace(kv.value), origin: path + ":" + strconv.Itoa(kv.line)}
		}
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("parse --conf %q: %w: Spark config without '=' (want key=value)", redactArg(o), ErrSyntax)
		}
		if !strings.HasPrefix(k, "spark.") {
			c.warnings = append(c.warnings, warningAt(OriginSparkConf, k+" is not a spark.* key; spark-submit ignores it"))
			continue
		}
		c.entries[k] = entry{value: strings.TrimSpace(v), origin: OriginSparkConf}
	}
	return c, nil
}

// readConfigFile reads the configuration file at path; a missing file is
// ErrConfNotFound. what names the kind of configuration in errors.
func readConfigFile(what, path string) ([]byte, error) {
	data, err := localfile.ReadRegular(path, MaxFileSize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read %s configuration %s: %w: %w", what, path, ErrConfNotFound, err)
		}
		return nil, fmt.Errorf("read %s configuration %s: %w", what, path, err)
	}
	return data, nil
}

// parseProperties reads a Java properties file (spark-defaults.conf is
// one): "#" and "!" start comment lines; a key ends at the first unescaped
// '=', ':' or blank, after which blanks and one '=' or ':' are skipped; a
// line ending in an odd number of backslashes continues on the next one;
// \t \n \r \f \uXXXX and \<any> are unescaped. The line is the key's first.
func parseProperties(data []byte) []keyValue {
	lines := strings.Split(strings.TrimPrefix(string(data), "\ufeff"), "\n")
	var kvs []keyValue
	for i := 0; i < len(lines); i++ {
		first := i + 1
		logical := strings.TrimLeft(strings.TrimRight(lines[i], "\r"), " \t\f")
		if logical == "" || logical[0] == '#' || logical[0] == '!' {
			continue
		}
		for trailingBackslashes(logical)%2 == 1 && i+1 < len(lines) {
			i++
			logical = logical[:len(logical)-1] + strings.TrimLeft(strings.TrimRight(lines[i], "\r"), " \t\f")
		}
		if trailingBackslashes(logical)%2 == 1 {
			logical = logical[:len(logical)-1]
		}
		key, rest := splitPropertyKey(logical)
		kvs = append(kvs, keyValue{key: unescapeProperty(key), value: unescapeProperty(rest), line: first})
	}
	return kvs
}

func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

// splitPropertyKey splits a logical line into its raw key and raw value.
func splitPropertyKey(s string) (key, value string) {
	end := len(s)
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '=' || s[i] == ':' || s[i] == ' ' || s[i] == '\t' || s[i] == '\f' {
			end = i
			break
		}
	}
	key, rest := s[:end], s[end:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

func unescapeProperty(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 < len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+5], 16, 16); err == nil {
					b.WriteRune(rune(r))
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// sparkResource is one spark.executor.resource.<name>.* group.
type sparkResource struct {
	name                   string
	amount, script, vendor string
	amountKey              string
}

// FromSpark maps a Spark configuration (LoadSpark) onto the Flink keys xres
// reads, with Spark 3.5's rules:
//
//	spark.executor.resource.<r>.amount           external-resource.<r>.amount; required once any
//	                                             spark.executor.resource.<r>.* is set; a whole
//	                                             number (only tasks take fractions); <= 0 drops <r>
//	spark.executor.resource.<r>.discoveryScript  param.discovery-script.path, protocol spark, with
//	                                             the GPU driver (for any <r>)
//	spark.executor.resource.<r>.vendor           kubernetes.config-key <vendor>/<r> (Spark on
//	                                             Kubernetes); amd.com for gpu picks xres.amd-gpu
//	gpu, fpga                                    yarn.config-key spark.yarn.resourceGpuDeviceName
//	                                             (yarn.io/gpu), ...FpgaDeviceName (yarn.io/fpga)
//	spark.yarn.executor.resource.<t>.amount      a resource named after YARN type <t>, requested
//	                                             from YARN and not discovered
//
// A gpu without a discovery script is discovered by the GPU driver's
// built-in NVML/nvidia-smi discovery (Spark on YARN would refuse to start
// it). Each Flink key's origin names the Spark key and where it was set,
// e.g. "spark-defaults.conf:3 (spark.executor.resource.gpu.amount)". Every
// problem is reported at once, each naming its key and origin.
func FromSpark(spark *Config) (*Config, error) {
	out := New()
	out.path = spark.Path()
	out.warnings = append([]Warning(nil), spark.Warnings()...)
	set := func(key, value, origin string) { out.entries[key] = entry{value: value, origin: origin} }
	from := func(sparkKey string) string { return spark.Origin(sparkKey) + " (" + sparkKey + ")" }
	var problems []string
	fail := func(key, format string, a ...any) {
		problems = append(problems, fmt.Sprintf("%s (%s): %s", key, spark.Origin(key), fmt.Sprintf(format, a...)))
	}

	byName := map[string]*sparkResource{}
	var names []string
	for _, k := range spark.Keys() {
		rest, ok := strings.CutPrefix(k, SparkExecutorResourcePrefix)
		if !ok {
			continue
		}
		name, suffix, ok := strings.Cut(rest, ".")
		if !ok || name == "" {
			fail(k, "name the resource and the setting, e.g. %sgpu.amount", SparkExecutorResourcePrefix)
			continue
		}
		r := byName[name]
		if r == nil {
			r = &sparkResource{name: name, amountKey: SparkExecutorResourcePrefix + name + "." + sparkAmount}
			byName[name] = r
			names = append(names, name)
		}
		v, _ := spark.Get(k)
		switch suffix {
		case sparkAmount:
			r.amount = v
		case sparkDiscoveryScript:
			r.script = v
		case sparkVendor:
			r.vendor = v
		default:
			out.warnings = append(out.warnings, warningAt(spark.Origin(k), k+": Spark knows amount, discoveryScript and vendor only; ignored"))
		}
	}
	yarnType := func(name string) (string, string) {
		key := map[string]string{"gpu": SparkYarnGPUDeviceName, "fpga": SparkYarnFPGADeviceName}[name]
		if key == "" {
			return "", ""
		}
		if v, ok := spark.Get(key); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), from(key)
		}
		return "yarn.io/" + name, "Spark's default for " + name + " (" + key + ")"
	}

	var listed []string
	mappedYarn := map[string]string{} // YARN type -> the Spark key that asks for it
	for _, name := range names {
		r := byName[name]
		if r.amount == "" {
			if _, ok := spark.Get(r.amountKey); !ok {
				problems = append(problems, fmt.Sprintf("%s: missing; Spark needs an amount for resource %s (set by %s)", r.amountKey, name, firstKeyOf(spark, SparkExecutorResourcePrefix+name+".")))
				continue
			}
		}
		n, err := strconv.ParseInt(r.amount, 10, 32)
		if err != nil {
			if f, ferr := strconv.ParseFloat(r.amount, 64); ferr == nil && f != float64(int64(f)) {
				fail(r.amountKey, "%q: only tasks take fractional resources (spark.task.resource.%s.amount); an executor's amount is a whole number", r.amount, name)
			} else {
				fail(r.amountKey, "%q is not a whole number", r.amount)
			}
			continue
		}
		if n <= 0 {
			out.warnings = append(out.warnings, warningAt(spark.Origin(r.amountKey), r.amountKey+" is not positive; Spark does not request "+name))
			continue
		}
		listed = append(listed, name)
		set(ExternalResourceAmount.For(name).Key, strconv.FormatInt(n, 10), from(r.amountKey))
		if t, origin := yarnType(name); t != "" {
			set(ExternalResourceYarnKey.For(name).Key, t, origin)
			mappedYarn[t] = r.amountKey
		}
		if r.vendor != "" {
			vk := SparkExecutorResourcePrefix + name + "." + sparkVendor
			set(ExternalResourceK8sKey.For(name).Key, r.vendor+"/"+name, from(vk))
		}
		switch {
		case r.script != "":
			sk := SparkExecutorResourcePrefix + name + "." + sparkDiscoveryScript
			set(ExternalResourceFactory.For(name).Key, sparkFactoryGPU, from(sk))
			set(ExternalResourceParam.For(name, sparkParamScript).Key, r.script, from(sk))
			set(ExternalResourceParam.For(name, sparkParamProtocol).Key, "spark", from(sk))
			if name != "gpu" || r.vendor == "amd.com" {
				vendor := "none"
				if r.vendor == "amd.com" {
					vendor = "amd"
				}
				set(ExternalResourceParam.For(name, sparkParamVendorEnv).Key, vendor, from(sk))
			}
		case name == "gpu" && r.vendor == "amd.com":
			set(ExternalResourceFactory.For(name).Key, sparkFactoryAMD, from(SparkExecutorResourcePrefix+name+"."+sparkVendor))
		case name == "gpu":
			set(ExternalResourceFactory.For(name).Key, sparkFactoryGPU, "xres: built-in GPU discovery, no "+SparkExecutorResourcePrefix+"gpu."+sparkDiscoveryScript)
		}
	}

	// spark.yarn.executor.resource.<type>.amount: YARN-only requests.
	for _, k := range spark.Keys() {
		rest, ok := strings.CutPrefix(k, SparkYarnExecutorPrefix)
		if !ok {
			continue
		}
		t, ok := strings.CutSuffix(rest, "."+sparkAmount)
		if !ok || t == "" {
			fail(k, "want %s<yarn resource type>.amount", SparkYarnExecutorPrefix)
			continue
		}
		if other, dup := mappedYarn[t]; dup {
			fail(k, "asks YARN for %s, which %s already asks for; keep one", t, other)
			continue
		}
		v, _ := spark.Get(k)
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 {
			fail(k, "%q is not a positive whole number", v)
			continue
		}
		name := yarnResourceName(t)
		if _, taken := byName[name]; taken {
			fail(k, "the resource name %s it would get is taken by %s%s.*", name, SparkExecutorResourcePrefix, name)
			continue
		}
		listed = append(listed, name)
		set(ExternalResourceAmount.For(name).Key, strconv.FormatInt(n, 10), from(k))
		set(ExternalResourceYarnKey.For(name).Key, t, from(k))
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, fmt.Errorf("%w: %s", ErrSpark, strings.Join(problems, "; "))
	}
	if len(listed) > 0 {
		set(ExternalResources.Key, strings.Join(listed, ";"), "Spark: "+SparkExecutorResourcePrefix+"* and "+SparkYarnExecutorPrefix+"*")
	}
	return out, nil
}

// resourceKey names external-resource.<name>.<suffix> (resources.Key's
// twin; conf cannot import resources).
// warningAt is a warning about the value that came from origin ("file:line"
// or "--conf").
func warningAt(origin, msg string) Warning {
	if i := strings.LastIndexByte(origin, ':'); i > 0 {
		if n, err := strconv.Atoi(origin[i+1:]); err == nil {
			return Warning{File: origin[:i], Line: n, Message: msg}
		}
	}
	return Warning{File: origin, Message: msg}
}

// yarnResourceName makes a resource name of a YARN type: yarn.io/fpga
// gives yarn-io-fpga.
func yarnResourceName(t string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, t)
}

func firstKeyOf(c *Config, prefix string) string {
	for _, k := range c.Keys() {
		if strings.HasPrefix(k, prefix) {
			return k + " at " + c.Origin(k)
		}
	}
	return prefix + "*"
}

// WithSpark lays the Flink keys of a Spark configuration (FromSpark's
// result) over c, keeping their Spark origins: a Spark value wins over c's
// file, and c's -D overrides win over Spark. It returns the keys taken
// from spark as "key=value" overrides, in key order, for a caller that
// must pass the same configuration on (am submit stages them with -D's).
func (c *Config) WithSpark(spark *Config) []string {
	var taken []string
	for _, k := range spark.Keys() {
		if e, ok := c.entries[k]; ok && e.origin == OriginDynamic {
			continue
		}
		c.entries[k] = spark.entries[k]
		taken = append(taken, k+"="+spark.entries[k].value)
	}
	c.warnings = append(c.warnings, spark.warnings...)
	return taken
}
