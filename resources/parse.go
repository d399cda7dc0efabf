package resources

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/xres/xres/conf"
)

// Key parts of Flink's external-resource options, cut from their
// declarations in conf (external-resource.<name>.<suffix>): Key(name,
// SuffixAmount) is conf.ExternalResourceAmount.For(name).Key.
var (
	KeyList       = conf.ExternalResources.Key
	KeyPrefix     = keyPrefix(conf.ExternalResourceAmount)
	SuffixAmount  = keySuffix(conf.ExternalResourceAmount)
	SuffixYarnKey = keySuffix(conf.ExternalResourceYarnKey)
	SuffixK8sKey  = keySuffix(conf.ExternalResourceK8sKey)
	SuffixFactory = keySuffix(conf.ExternalResourceFactory)
	SuffixParam   = keySuffix(conf.ExternalResourceParam) // "param.": the param's name follows
)

// None is the reserved list value meaning no resources (Flink 1.13+).
const None = "none"

// keyPrefix is an external-resource.<name>.… key up to <name>.
func keyPrefix(o conf.Option) string { return o.Key[:strings.Index(o.Key, "<name>")] }

// keySuffix is an external-resource.<name>.… key after "<name>.", up to
// a further placeholder.
func keySuffix(o conf.Option) string {
	s := o.Key[strings.Index(o.Key, "<name>.")+len("<name>."):]
	if i := strings.Index(s, "<"); i >= 0 {
		s = s[:i]
	}
	return s
}

// Key returns the configuration key external-resource.<name>.<suffix>.
func Key(name, suffix string) string { return KeyPrefix + name + "." + suffix }

// Errors callers test for.
var (
	// ErrStrict marks a configuration that strict mode refuses: something
	// Flink only warns about.
	ErrStrict = errors.New("external resource configuration refused in strict mode")
)

// Side says who reads the specs, which decides which missing keys are
// reported, as Flink reports them on that side.
type Side int

const (
	// SideAny checks what every side needs: the list and the amounts.
	SideAny Side = iota
	// SideYarn also reports resources without yarn.config-key (Flink's YARN
	// resource manager warns and does not request them).
	SideYarn
	// SideKubernetes also reports resources without kubernetes.config-key.
	SideKubernetes
	// SideWorker also reports resources without driver-factory.class
	// (Flink's TaskManager warns and the worker gets no infos).
	SideWorker
)

// ParseOptions tune Parse.
type ParseOptions struct {
	// Strict turns every warning into one error listing all problems. The
	// configuration's xres.strict: true does the same.
	Strict bool
	// Log receives one warning per problem when not strict; nil discards.
	Log logrus.FieldLogger
	// Side selects the side-specific checks; the zero value checks what
	// every side needs.
	Side Side
}

// ConfigError lists every problem that made Parse fail, at once.
type ConfigError struct {
	Problems []Problem
	strict   bool
}

// Error renders "external resource configuration: N problem(s): ...".
func (e *ConfigError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	s := "s"
	if len(parts) == 1 {
		s = ""
	}
	return fmt.Sprintf("external resource configuration: %d problem%s: %s", len(parts), s, strings.Join(parts, "; "))
}

// Is matches ErrStrict when strict mode refused a warning.
func (e *ConfigError) Is(target error) bool {
	for _, p := range e.Problems {
		if target == ErrStrict && e.strict && p.Severity == SeverityWarning {
			return true
		}
	}
	return false
}

// Unwrap returns a *conf.Error (key, file, line; matching conf.ErrInvalid)
// for each problem that is an error Flink would fail on (a malformed
// external-resources list, a non-integer amount).
func (e *ConfigError) Unwrap() []error {
	var out []error
	for _, p := range e.Problems {
		if p.Severity == SeverityError {
			out = append(out, conf.ErrorAt(p.Key, p.Origin, errors.New(p.Message)))
		}
	}
	return out
}

// Names returns the names listed in external-resources, in listed order
// with duplicates dropped (Flink puts them in a set). The single value
// "none" and an unset or empty value mean no resources. A malformed list
// is an error naming the key and its origin.
func Names(cfg *conf.Config) ([]string, error) {
	if raw, _ := cfg.Get(KeyList); raw == None {
		return nil, nil
	}
	list, _, err := cfg.ListKey(KeyList)
	if err != nil {
		return nil, err // a *conf.Error naming the key, file and line
	}
	seen := map[string]bool{}
	var names []string
	for _, n := range list {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names, nil
}

// Parse reads the enabled external resources with Flink's semantics
// (ExternalResourceUtils): only names listed in external-resources count;
// a resource whose amount is missing or not positive is skipped with a
// warning; a non-integer amount or a malformed list is an error. Config
// keys and the factory class are kept verbatim, blank meaning unset, and
// param.* is handed over with the prefix stripped.
//
// Two resources naming the same yarn.config-key (or kubernetes.config-key)
// are resolved deterministically: the name listed first in
// external-resources keeps the key, the later ones lose it (they are not
// requested from YARN under it, but are still discovered on the worker),
// and each loss is reported. Flink's choice there depends on hash order.
//
// Every problem Flink only warns about, including configuration file
// lines the loader skipped, is logged as a warning; in strict
// mode (opts.Strict or xres.strict: true) they all become one *ConfigError
// instead. Errors are always returned together in one *ConfigError. The
// specs come back sorted by name.
func Parse(cfg *conf.Config, opts ParseOptions) ([]Spec, error) {
	log := opts.Log
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = l
	}
	names, strictSet, probs, ok := readHead(cfg)
	strict := opts.Strict || strictSet
	if !ok {
		return nil, &ConfigError{Problems: probs, strict: strict}
	}

	var specs []Spec
	for _, name := range names {
		spec, p := parseOne(cfg, name, opts.Side)
		probs = append(probs, p...)
		if spec != nil {
			specs = append(specs, *spec)
		}
	}
	probs = append(probs, dedupeConfigKeys(cfg, specs)...)
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })

	var fail []Problem
	for _, p := range probs {
		if p.Severity == SeverityError || strict {
			fail = append(fail, p)
			continue
		}
		log.WithFields(logrus.Fields{"key": p.Key, "origin": p.Origin, "fix": p.Fix}).Warn(p.Message)
	}
	if len(fail) > 0 {
		return nil, &ConfigError{Problems: fail, strict: strict}
	}
	for _, s := range specs {
		log.WithFields(logrus.Fields{"resource": s.Name, "amount": s.Amount, "yarn_key": s.YarnKey,
			"kubernetes_key": s.K8sKey, "factory": s.Factory}).Debug("external resource enabled")
	}
	return specs, nil
}

// readHead reads what Parse and Lint check before any resource: the file
// lines the loader skipped (Flink WARN-and-skips them), xres.strict, and
// the external-resources list. ok is false when the list is malformed;
// its problem is then among probs.
func readHead(cfg *conf.Config) (names []string, strict bool, probs []Problem, ok bool) {
	probs = fileProblems(cfg)
	strict, err := cfg.Bool(conf.Strict)
	if err != nil {
		probs = append(probs, Problem{Key: conf.Strict.Key, Origin: cfg.Origin(conf.Strict.Key),
			Severity: SeverityError, Message: reason(err), Fix: "set xres.strict to true or false"})
	}
	names, err = Names(cfg)
	if err != nil {
		probs = append(probs, Problem{Key: KeyList, Origin: cfg.Origin(KeyList), Severity: SeverityError,
			Message: reason(err), Fix: "separate names with ';' and quote a whole name, not part of it"})
		return nil, strict, probs, false
	}
	if p := nameProblems(cfg, names); len(p) > 0 {
		return nil, strict, append(probs, p...), false
	}
	return names, strict, probs, true
}

// IsSafeName reports whether a resource name is in the set xres accepts:
// ASCII letters, digits, '-', '_' and '.' (what Flink configurations use
// in practice). Anything else (blanks, '=', ',', control characters)
// would end up mangled in variable names, keys and logs.
func IsSafeName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

// EnvToken is a resource name (or property key) as it appears in the
// worker's XRES_RESOURCE_<NAME>_<KEY> variables: upper-cased, every
// character other than A-Z and 0-9 replaced by '_' (the launcher's
// rule: driver.EnvToken calls this one).
func EnvToken(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// nameProblems refuses listed names outside the safe set (IsSafeName),
// quoted, and two names whose XRES_RESOURCE_<NAME>_* variables would be
// the same (GPU and gpu, gpu-a and gpu.a), naming both.
func nameProblems(cfg *conf.Config, names []string) []Problem {
	var probs []Problem
	origin := cfg.Origin(KeyList)
	byToken := map[string]string{}
	for _, n := range names {
		if n == "" {
			continue // parseOne reports the empty name
		}
		if !IsSafeName(n) {
			probs = append(probs, Problem{Key: KeyList, Origin: origin, Severity: SeverityError,
				Message: fmt.Sprintf("resource name %q has characters outside letters, digits, '-', '_' and '.'", n),
				Fix:     "rename the resource (and its external-resource.<name>.* keys) with letters, digits, '-', '_' or '.' only"})
			continue
		}
		tok := EnvToken(n)
		if first, ok := byToken[tok]; ok {
			probs = append(probs, Problem{Key: KeyList, Origin: origin, Severity: SeverityError,
				Message: fmt.Sprintf("resource names %q and %q collide: both give the worker %s%s_* variables", first, n, "XRES_RESOURCE_", tok),
				Fix:     fmt.Sprintf("rename one of %q and %q so that they differ in more than case and '-', '_', '.'", first, n)})
			continue
		}
		byToken[tok] = n
	}
	return probs
}

// parseOne reads one listed resource; nil when it is skipped.
func parseOne(cfg *conf.Config, name string, side Side) (*Spec, []Problem) {
	var probs []Problem
	if name == "" {
		return nil, []Problem{{Key: KeyList, Origin: cfg.Origin(KeyList), Severity: SeverityWarning,
			Message: "external-resources holds an empty name (two ';' in a row); it is ignored",
			Fix:     "remove the extra ';'"}}
	}
	amountKey := conf.ExternalResourceAmount.For(name).Key
	amount, ok, err := cfg.Int64Key(amountKey)
	switch {
	case err != nil:
		return nil, []Problem{{Key: amountKey, Origin: cfg.Origin(amountKey), Severity: SeverityError,
			Message: reason(err), Fix: fmt.Sprintf("set %s to a whole number such as 1", amountKey)}}
	case !ok:
		// Flink warns and runs the worker without the resource; every xres
		// entry point refuses it instead (a worker silently without its
		// GPU is the worst outcome), the same way Lint reports it.
		return nil, []Problem{{Key: amountKey, Severity: SeverityError,
			Message: fmt.Sprintf("resource %s is listed but has no amount", name),
			Fix:     fmt.Sprintf("set %s: 1 (devices per worker), or remove %s from %s", amountKey, name, KeyList)}}
	case amount <= 0:
		return nil, []Problem{{Key: amountKey, Origin: cfg.Origin(amountKey), Severity: SeverityError,
			Message: fmt.Sprintf("the amount of resource %s must be positive, got %d", name, amount),
			Fix:     fmt.Sprintf("set %s to 1 or more, or remove %s from %s", amountKey, name, KeyList)}}
	}
	s := &Spec{
		Name:    name,
		Amount:  amount,
		YarnKey: nonBlank(cfg, conf.ExternalResourceYarnKey.For(name).Key),
		K8sKey:  nonBlank(cfg, conf.ExternalResourceK8sKey.For(name).Key),
		Factory: nonBlank(cfg, conf.ExternalResourceFactory.For(name).Key),
		Params:  cfg.WithPrefix(conf.ExternalResourceParam.For(name, "").Key),
	}
	switch {
	case side == SideYarn && s.YarnKey == "":
		k := conf.ExternalResourceYarnKey.For(name).Key
		probs = append(probs, Problem{Key: k, Severity: SeverityWarning,
			Message: fmt.Sprintf("no valid %s for resource %s; it is not requested from YARN", k, name),
			Fix:     fmt.Sprintf("set %s: yarn.io/gpu (the YARN resource type)", k)})
	case side == SideKubernetes && s.K8sKey == "":
		k := conf.ExternalResourceK8sKey.For(name).Key
		probs = append(probs, Problem{Key: k, Severity: SeverityWarning,
			Message: fmt.Sprintf("no valid %s for resource %s; it is not requested from Kubernetes", k, name),
			Fix:     fmt.Sprintf("set %s: nvidia.com/gpu (the extended resource name)", k)})
	case side == SideWorker && s.Factory == "":
		k := conf.ExternalResourceFactory.For(name).Key
		probs = append(probs, Problem{Key: k, Severity: SeverityWarning,
			Message: fmt.Sprintf("no driver class name for resource %s; workers get no device infos", name),
			Fix:     fmt.Sprintf("set %s: org.apache.flink.externalresource.gpu.GPUDriverFactory", k)})
	}
	return s, probs
}

// nonBlank returns key's value, "" when unset or only blanks (Flink's
// isNullOrWhitespaceOnly). The value is not trimmed, as in Flink.
func nonBlank(cfg *conf.Config, key string) string {
	v, _ := cfg.Get(key)
	if strings.TrimSpace(v) == "" {
		return ""
	}
	return v
}

// dedupeConfigKeys resolves yarn.config-key and kubernetes.config-key
// held twice among specs (in listed order) with dedupeKeys.
func dedupeConfigKeys(cfg *conf.Config, specs []Spec) []Problem {
	probs := dedupeKeys(cfg, specs, SuffixYarnKey, func(s *Spec) *string { return &s.YarnKey })
	return append(probs, dedupeKeys(cfg, specs, SuffixK8sKey, func(s *Spec) *string { return &s.K8sKey })...)
}

// dedupeKeys clears a config key held by an earlier-listed spec from the
// later ones (specs are in listed order here) and reports each.
func dedupeKeys(cfg *conf.Config, specs []Spec, suffix string, field func(*Spec) *string) []Problem {
	var probs []Problem
	owner := map[string]string{}
	for i := range specs {
		k := field(&specs[i])
		if *k == "" {
			continue
		}
		first, taken := owner[*k]
		if !taken {
			owner[*k] = specs[i].Name
			continue
		}
		key := Key(specs[i].Name, suffix)
		probs = append(probs, Problem{Key: key, Origin: cfg.Origin(key), Severity: SeverityWarning,
			Message: fmt.Sprintf("duplicate config key %s: resources %s and %s both use it; %s (listed first) keeps it and %s is not requested under it",
				*k, first, specs[i].Name, first, specs[i].Name),
			Fix: fmt.Sprintf("give each resource its own %s, or merge them into one resource", suffix)})
		*k = ""
	}
	return probs
}

// YarnResources returns the YARN resource request each worker carries for
// its external resources: yarn.config-key → amount, for specs with a key (the first
// spec wins a key held twice; Parse never returns such specs).
func YarnResources(specs []Spec) map[string]int64 {
	out := map[string]int64{}
	for _, s := range specs {
		if _, taken := out[s.YarnKey]; s.YarnKey != "" && !taken {
			out[s.YarnKey] = s.Amount
		}
	}
	return out
}

// KubernetesResources returns the extended resources for a worker's main
// container: requests and limits are equal, kubernetes.config-key →
// amount, for specs with a key (as Flink's KubernetesUtils).
func KubernetesResources(specs []Spec) (requests, limits map[string]string) {
	requests, limits = map[string]string{}, map[string]string{}
	for _, s := range specs {
		if _, taken := requests[s.K8sKey]; s.K8sKey != "" && !taken {
			q := strconv.FormatInt(s.Amount, 10)
			requests[s.K8sKey], limits[s.K8sKey] = q, q
		}
	}
	return requests, limits
}
