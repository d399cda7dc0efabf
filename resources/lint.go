package resources

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/xres/xres/conf/factoryname"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/conf/suggest"
)

// Severity grades a Problem.
type Severity string

// Severities. An error leaves a worker without its devices (or stops
// start-up); a warning is a likely mistake that does not.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Problem is one configuration pitfall, with the fix.
type Problem struct {
	Key      string   // the key at fault ("" for a file line)
	Origin   string   // where it was set ("file:line", "-D", ...); "" when unset
	Severity Severity // error or warning
	Message  string   // what is wrong
	Fix      string   // what to do about it
}

// String renders "key (origin): message (fix: ...)"; a key holding a
// control or non-ASCII character is quoted (%q), never written raw.
func (p Problem) String() string {
	var b strings.Builder
	if p.Key != "" && !isPrintableASCII(p.Key) {
		p.Key = strconv.Quote(p.Key)
	}
	switch {
	case p.Key != "" && p.Origin != "":
		fmt.Fprintf(&b, "%s (%s): ", p.Key, p.Origin)
	case p.Key != "":
		b.WriteString(p.Key + ": ")
	case p.Origin != "":
		b.WriteString(p.Origin + ": ")
	}
	b.WriteString(p.Message)
	if p.Fix != "" {
		b.WriteString(" (fix: " + p.Fix + ")")
	}
	return b.String()
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// shown is a resource name as messages write it: as it is when safe
// (IsSafeName), else quoted, so that a control character is never echoed.
func shown(n string) string {
	if IsSafeName(n) {
		return n
	}
	return strconv.Quote(n)
}

// MaxPlausibleAmount is the most devices of one resource a worker can
// plausibly ask for: Lint warns of a larger amount (a typo, an exponent),
// naming the key.
const MaxPlausibleAmount = 1024

// knownSuffixes are the per-resource keys Flink and xres read, after
// external-resource.<name>.
var knownSuffixes = []string{SuffixAmount, SuffixYarnKey, SuffixK8sKey, SuffixFactory}

// Lint checks the configuration alone (no host, no cluster) for the
// pitfalls that leave workers without devices, each with a fix:
//
//   - file lines Flink skips (no ": " separator, empty value);
//   - a malformed external-resources list;
//   - keys set for external-resource.X.* while X is not listed (with a
//     did-you-mean among the listed names, e.g. gpus → gpu);
//   - an unknown key under a listed resource (e.g. amout → amount);
//   - a listed resource without amount, with a non-integer or non-positive
//     amount, or with more than MaxPlausibleAmount devices;
//   - a listed resource without driver-factory.class (workers get no infos)
//     or without yarn.config-key (not requested from YARN);
//   - two resources with the same yarn.config-key or kubernetes.config-key;
//   - --enable-coordination in discovery-script.args (the flag from Flink's
//     docs that the script ignores; the script wants
//     --enable-coordination-mode).
//
// Problems come sorted by key, then message.
func Lint(cfg *conf.Config) []Problem { return LintWith(cfg, LintOptions{}) }

// LintOptions tells Lint what it cannot find out itself (it does no I/O).
type LintOptions struct {
	// Known, when not nil, are the factory names known here besides the
	// built-in ones (a launcher's registry, the device plugins installed
	// under PluginRoot): a driver factory that is none of them is then an
	// error. When nil (the plugins are on the worker hosts, not here), only
	// a factory that looks like a misspelt known name or a Java class name
	// is an error, any other unknown name a warning.
	Known []string
	// PluginRoot is the plugins root named in messages ("" : not named).
	PluginRoot string
	// SkipFactories leaves the driver factories unchecked (the caller
	// checks them per resource, with FactoryProblem).
	SkipFactories bool
}

// LintWith is Lint with options. Unless o.SkipFactories, it also checks
// every listed resource's driver-factory.class (FactoryProblem).
func LintWith(cfg *conf.Config, o LintOptions) []Problem {
	names, _, probs, ok := readHead(cfg)
	if !ok {
		return sortProblems(probs)
	}
	raw, _ := cfg.Get(KeyList)
	listed := map[string]bool{}
	for _, n := range names {
		listed[n] = true
	}

	// Keys under external-resource.*, grouped by resource name.
	// An unknown key under a listed resource is reported at once.
	byName := map[string][]string{}
	for _, k := range cfg.Keys() {
		name, suffix, ok := splitResourceKey(k, listed)
		if !ok {
			continue
		}
		byName[name] = append(byName[name], k)
		if !listed[name] || isKnownSuffix(suffix) {
			continue
		}
		p := Problem{Key: k, Origin: cfg.Origin(k), Severity: SeverityWarning,
			Message: fmt.Sprintf("unknown key for resource %s; it is ignored", name)}
		if s := closest(suffix, knownSuffixes, 3); s != "" {
			p.Fix = fmt.Sprintf("did you mean %s?", Key(name, s))
		} else {
			p.Fix = fmt.Sprintf("use one of %s, or param.<key> for driver parameters", strings.Join(knownSuffixes, ", "))
		}
		probs = append(probs, p)
	}

	// Resources configured but not listed.
	var unlisted []string
	for n := range byName {
		if !listed[n] {
			unlisted = append(unlisted, n)
		}
	}
	sort.Strings(unlisted)
	for _, n := range unlisted {
		k := byName[n][0]
		p := Problem{Key: k, Origin: cfg.Origin(k), Severity: SeverityError}
		switch {
		case raw == None:
			p.Severity = SeverityWarning
			p.Message = fmt.Sprintf("keys are set for external-resource.%s.* but external-resources is none; they are ignored", shown(n))
			p.Fix = fmt.Sprintf("list %s in external-resources if workers should get it", shown(n))
		case len(names) == 0:
			p.Message = fmt.Sprintf("keys are set for external-resource.%s.* but external-resources is not set; the resource is ignored", shown(n))
			p.Fix = fmt.Sprintf("add external-resources: %s", shown(n))
		default:
			p.Message = fmt.Sprintf("keys are set for external-resource.%s.* but external-resources lists %s; the resource is ignored",
				shown(n), strings.Join(names, ";"))
			if m := closest(n, names, max(2, len(n)/3)); m != "" {
				p.Fix = fmt.Sprintf("did you mean %s? rename the keys to external-resource.%s.*, or add %s to external-resources", m, m, shown(n))
			} else {
				p.Fix = fmt.Sprintf("add %s to external-resources: %s", shown(n), conf.JoinList(append(append([]string(nil), names...), n)))
			}
		}
		if !IsSafeName(n) {
			p.Fix = "rename the keys: a resource name is letters, digits, '-', '_' and '.' only"
		}
		probs = append(probs, p)
	}

	// Listed resources.
	for _, n := range names {
		probs = append(probs, lintListed(cfg, n)...)
		if !o.SkipFactories {
			if p := FactoryProblem(cfg, n, o); p != nil {
				probs = append(probs, *p)
			}
		}
	}

	// Duplicate config keys, resolved as Parse does, among all listed
	// resources (a bad amount is reported above).
	var specs []Spec
	for _, n := range names {
		specs = append(specs, Spec{Name: n, YarnKey: nonBlank(cfg, conf.ExternalResourceYarnKey.For(n).Key), K8sKey: nonBlank(cfg, conf.ExternalResourceK8sKey.For(n).Key)})
	}
	probs = append(probs, dedupeConfigKeys(cfg, specs)...)
	return sortProblems(probs)
}

func lintListed(cfg *conf.Config, n string) []Problem {
	if n == "" {
		_, p := parseOne(cfg, n, SideAny)
		return p
	}
	var probs []Problem
	amountKey := conf.ExternalResourceAmount.For(n).Key
	amount, ok, err := cfg.Int64Key(amountKey)
	switch {
	case err != nil:
		probs = append(probs, Problem{Key: amountKey, Origin: cfg.Origin(amountKey), Severity: SeverityError,
			Message: reason(err), Fix: fmt.Sprintf("set %s to a whole number such as 1", amountKey)})
	case !ok, amount <= 0:
		_, p := parseOne(cfg, n, SideAny) // the same problem Parse refuses with
		probs = append(probs, p...)
	case amount > MaxPlausibleAmount:
		probs = append(probs, Problem{Key: amountKey, Origin: cfg.Origin(amountKey), Severity: SeverityWarning,
			Message: fmt.Sprintf("the amount of resource %s is %d devices per worker, more than the %d any host has; no NodeManager will grant it and no launcher will find that many", n, amount, MaxPlausibleAmount),
			Fix:     fmt.Sprintf("set %s to the devices one worker uses, such as 1", amountKey)})
	}
	if k := conf.ExternalResourceFactory.For(n).Key; nonBlank(cfg, k) == "" {
		probs = append(probs, Problem{Key: k, Severity: SeverityError,
			Message: fmt.Sprintf("resource %s has no driver factory; workers get it from the cluster but are told nothing about it (no device infos, no visible-devices variables)", n),
			Fix:     fmt.Sprintf("set %s: %s (or another xres driver)", k, factoryname.GPUFlink)})
	}
	if k := conf.ExternalResourceYarnKey.For(n).Key; nonBlank(cfg, k) == "" {
		probs = append(probs, Problem{Key: k, Origin: cfg.Origin(k), Severity: SeverityWarning,
			Message: fmt.Sprintf("resource %s has no yarn.config-key; it is not requested from YARN, so a worker may land on a host without it", n),
			Fix:     fmt.Sprintf("set %s: yarn.io/gpu (the YARN resource type; yarn.io/fpga for FPGAs)", k)})
	}
	argsKey := conf.ExternalResourceParam.For(n, "discovery-script.args").Key
	if args, ok := cfg.Get(argsKey); ok {
		for _, a := range strings.Fields(args) {
			if a == "--enable-coordination" {
				probs = append(probs, Problem{Key: argsKey, Origin: cfg.Origin(argsKey), Severity: SeverityWarning,
					Message: "--enable-coordination (from Flink's docs) is not a flag the discovery script knows; it is ignored and coordination stays off",
					Fix:     "write --enable-coordination-mode"})
			}
		}
	}
	return probs
}

// FactoryProblem reports resource n's driver-factory.class when no
// launcher would know it: not a built-in name (BuiltinFactoryNames), not
// PluginPrefix+<dir>, not one of o.Known; nil when it is known or unset
// (Lint reports a missing factory itself). The fix names the nearest known
// name ("did you mean"), else the known ones.
func FactoryProblem(cfg *conf.Config, n string, o LintOptions) *Problem {
	k := conf.ExternalResourceFactory.For(n).Key
	name := nonBlank(cfg, k)
	if n == "" || name == "" || strings.HasPrefix(name, PluginPrefix) {
		return nil
	}
	known := append(BuiltinFactoryNames(), o.Known...)
	sort.Strings(known)
	known = slices.Compact(known)
	if slices.Contains(known, name) {
		return nil
	}
	p := &Problem{Key: k, Origin: cfg.Origin(k), Severity: SeverityError,
		Message: fmt.Sprintf("driver factory %q is not known, so workers get no %s devices (every launcher exits %d)", name, n, LauncherExitConfig)}
	if s := closest(name, known, max(3, len(name)/4)); s != "" {
		p.Fix = fmt.Sprintf("did you mean %s?", s)
		return p
	}
	p.Fix = "use a registered factory (" + strings.Join(known, ", ") + ") or " + PluginPrefix + "<dir> for a device plugin"
	if o.PluginRoot != "" {
		p.Fix += ", or install a device plugin as " + o.PluginRoot + "/" + name + "/" + name
	}
	switch {
	case strings.Contains(name, ".") && strings.ToLower(name) != name:
		p.Fix += "; Flink plugin jars are not loaded by xres"
	case o.Known == nil:
		p.Severity = SeverityWarning
		p.Message = fmt.Sprintf("driver factory %q is not built in; workers get %s devices only where a device plugin of that name is installed under the plugins root", name, n)
	}
	return p
}

// splitResourceKey splits external-resource.<name>.<suffix>. A listed name
// that prefixes the rest wins (names may hold dots); otherwise the name
// ends before ".param." or a known suffix, or else at the first dot.
func splitResourceKey(key string, listed map[string]bool) (name, suffix string, ok bool) {
	rest, ok := strings.CutPrefix(key, KeyPrefix)
	if !ok || rest == "" {
		return "", "", false
	}
	best := ""
	for n := range listed {
		if n != "" && strings.HasPrefix(rest, n+".") && len(n) > len(best) {
			best = n
		}
	}
	if best != "" {
		return best, rest[len(best)+1:], true
	}
	if i := strings.Index(rest, "."+SuffixParam); i > 0 {
		return rest[:i], rest[i+1:], true
	}
	for _, s := range knownSuffixes {
		if n, ok := strings.CutSuffix(rest, "."+s); ok && n != "" {
			return n, s, true
		}
	}
	if i := strings.IndexByte(rest, '.'); i > 0 {
		return rest[:i], rest[i+1:], true
	}
	return rest, "", true
}

// reason drops key and origin from a conf.ValueError's message: the
// Problem names them already.
func reason(err error) string {
	var ve *conf.ValueError
	if errors.As(err, &ve) {
		return ve.Reason()
	}
	return err.Error()
}

func isKnownSuffix(s string) bool {
	if strings.HasPrefix(s, SuffixParam) && len(s) > len(SuffixParam) {
		return true
	}
	for _, k := range knownSuffixes {
		if s == k {
			return true
		}
	}
	return false
}

// closest returns the candidate nearest to s (suggest.Closest, case
// ignored), if within limit; ties go to the earlier candidate.
func closest(s string, candidates []string, limit int) string {
	if m := suggest.Closest(s, candidates, limit); len(m) > 0 {
		return m[0]
	}
	return ""
}

func sortProblems(p []Problem) []Problem {
	sort.SliceStable(p, func(i, j int) bool {
		if p[i].Key != p[j].Key {
			return p[i].Key < p[j].Key
		}
		if p[i].Origin != p[j].Origin {
			return p[i].Origin < p[j].Origin
		}
		return p[i].Message < p[j].Message
	})
	return p
}

// fileProblems reports the configuration file lines the loader skipped.
func fileProblems(cfg *conf.Config) []Problem {
	var probs []Problem
	for _, w := range cfg.Warnings() {
		fix := w.Fix
		if fix == "" {
			fix = `write "key: value", with a space after the colon and a non-empty value`
		}
		probs = append(probs, Problem{Origin: fmt.Sprintf("%s:%d", w.File, w.Line), Severity: SeverityWarning,
			Message: w.Message, Fix: fix})
	}
	return probs
}
