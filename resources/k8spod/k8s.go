package k8spod

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
)

// ErrPodTemplate is wrapped by RenderPod's errors about its options.
var ErrPodTemplate = errors.New("invalid pod template options")

// PodOptions describes the worker pod RenderPod writes.
type PodOptions struct {
	Name  string // the pod's name, a DNS-1123 label; default "xres-worker"
	Image string // the worker image, holding container-launcher; required
	// Launcher is the container-launcher program in the image; default
	// "container-launcher" (looked up on the image's PATH).
	Launcher string
	// LauncherArgs go before "--", e.g. --conf /opt/flink/conf.
	LauncherArgs []string
	// Worker is the worker command and its arguments, after "--"; required.
	Worker []string
	// CPU is the container's CPU request and limit in cores (0: none);
	// Memory its memory request and limit in bytes (0: none), as Flink sets
	// both from taskmanager.cpu.cores and taskmanager.memory.process.size.
	CPU    float64
	Memory int64
	Env    map[string]string // extra environment variables
	Labels map[string]string // extra labels; app.kubernetes.io/name is set
}

// The Kubernetes core/v1 Pod fields RenderPod writes, named as in the
// Kubernetes API reference.
type (
	pod struct {
		APIVersion string     `json:"apiVersion"`
		Kind       string     `json:"kind"`
		Metadata   objectMeta `json:"metadata"`
		Spec       podSpec    `json:"spec"`
	}
	objectMeta struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	podSpec struct {
		RestartPolicy string      `json:"restartPolicy"`
		Containers    []container `json:"containers"`
	}
	container struct {
		Name      string               `json:"name"`
		Image     string               `json:"image"`
		Command   []string             `json:"command"`
		Args      []string             `json:"args"`
		Env       []envVar             `json:"env,omitempty"`
		Resources resourceRequirements `json:"resources"`
	}
	envVar struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	resourceRequirements struct {
		Limits   map[string]string `json:"limits,omitempty"`
		Requests map[string]string `json:"requests,omitempty"`
	}
)

// PodLabelName is the label RenderPod puts on the pod, its value the pod's
// name.
const PodLabelName = "app.kubernetes.io/name"

// The name rules below are checked by hand, not with regular expressions:
// linking the regexp package costs every launcher start (once per worker)
// its tables' initialisation.

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isDNS1123Label: 1 to 63 of [-a-z0-9], starting and ending alphanumeric
// (Kubernetes' DNS-1123 label).
func isDNS1123Label(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLower(c) && !isDigit(c) && c != '-' {
			return false
		}
	}
	return true
}

// isEnvName: [-._a-zA-Z][-._a-zA-Z0-9]* (Kubernetes' environment variable
// names).
func isEnvName(s string) bool {
	if len(s) == 0 || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLower(c) && !isUpper(c) && !isDigit(c) && c != '-' && c != '.' && c != '_' {
			return false
		}
	}
	return true
}

// RenderPod returns a worker pod template as YAML (for kubectl apply): one
// container running the launcher with the worker command after "--", its
// resources.requests and resources.limits holding every spec's
// kubernetes.config-key with its amount (equal, as Kubernetes requires for
// extended resources, and as Flink's KubernetesUtils sets them) and the
// CPU and memory of opts. Specs without a kubernetes.config-key are not
// requested; a comment at the top names them. The output is pure: no
// cluster is asked.
//
//	apiVersion: v1
//	kind: Pod
//	metadata:   name, labels {app.kubernetes.io/name}, annotations {xres.io/resources}
//	spec:
//	  restartPolicy: Never
//	  containers:
//	  - name: worker
//	    command: [<launcher>]   args: [<launcher args>…, "--", <worker>…]
//	    resources: {limits, requests}: {cpu, memory, <config-key>: <amount>}
func RenderPod(specs []resources.Spec, opts PodOptions) ([]byte, error) {
	if opts.Name == "" {
		opts.Name = "xres-worker"
	}
	if opts.Launcher == "" {
		opts.Launcher = "container-launcher"
	}
	switch {
	case !isDNS1123Label(opts.Name):
		return nil, fmt.Errorf("%w: pod name %q must be a DNS-1123 label (a-z, 0-9, '-', at most 63)", ErrPodTemplate, opts.Name)
	case strings.TrimSpace(opts.Image) == "":
		return nil, fmt.Errorf("%w: no image (the worker image holding %s)", ErrPodTemplate, opts.Launcher)
	case len(opts.Worker) == 0:
		return nil, fmt.Errorf("%w: no worker command", ErrPodTemplate)
	case opts.CPU < 0 || math.IsNaN(opts.CPU) || math.IsInf(opts.CPU, 0) || opts.Memory < 0:
		return nil, fmt.Errorf("%w: cpu %v and memory %d must not be negative", ErrPodTemplate, opts.CPU, opts.Memory)
	}
	requests, limits := resources.KubernetesResources(specs)
	if opts.CPU > 0 {
		// Millicores, rounded up so a fraction is never lost.
		q := strconv.FormatInt(int64(math.Ceil(opts.CPU*1000)), 10) + "m"
		requests["cpu"], limits["cpu"] = q, q
	}
	if opts.Memory > 0 {
		q := strconv.FormatInt(opts.Memory, 10)
		requests["memory"], limits["memory"] = q, q
	}
	var notRequested []string
	for _, s := range specs {
		if s.K8sKey == "" {
			notRequested = append(notRequested, s.Name)
		}
	}
	c := container{
		Name:      "worker",
		Image:     opts.Image,
		Command:   []string{opts.Launcher},
		Args:      append(append(append([]string{}, opts.LauncherArgs...), "--"), opts.Worker...),
		Resources: resourceRequirements{Limits: limits, Requests: requests},
	}
	envKeys := make([]string, 0, len(opts.Env))
	for k := range opts.Env {
		if !isEnvName(k) {
			return nil, fmt.Errorf("%w: environment variable name %q", ErrPodTemplate, k)
		}
		envKeys = append(envKeys, k)
	}
	sort.Strings(envKeys)
	for _, k := range envKeys {
		c.Env = append(c.Env, envVar{Name: k, Value: opts.Env[k]})
	}
	labels := map[string]string{PodLabelName: opts.Name}
	for k, v := range opts.Labels {
		labels[k] = v
	}
	p := pod{
		APIVersion: "v1", Kind: "Pod",
		Metadata: objectMeta{Name: opts.Name, Labels: labels},
		Spec:     podSpec{RestartPolicy: "Never", Containers: []container{c}},
	}
	if len(specs) > 0 {
		names := make([]string, len(specs))
		for i, s := range specs {
			names[i] = s.Name + "=" + strconv.FormatInt(s.Amount, 10)
		}
		p.Metadata.Annotations = map[string]string{"xres.io/resources": strings.Join(names, ",")}
	}
	var b bytes.Buffer
	b.WriteString("# Worker pod template written by xres; the launcher discovers the devices Kubernetes grants.\n")
	if len(notRequested) > 0 {
		fmt.Fprintf(&b, "# Not requested (no kubernetes.config-key): %s\n", strings.Join(notRequested, ", "))
	}
	if err := writeYAML(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeYAML writes v (anything encoding/json takes) as block-style YAML:
// mappings with sorted keys, sequences as "- " items, every string
// double-quoted with JSON's escapes (valid YAML), numbers and booleans bare.
func writeYAML(b *bytes.Buffer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return err
	}
	return yamlNode(b, tree, 0, false)
}

// yamlNode writes n at indent. inSeq: n follows "- " on the current line.
func yamlNode(b *bytes.Buffer, n any, indent int, inSeq bool) error {
	pad := strings.Repeat("  ", indent)
	switch n := n.(type) {
	case map[string]any:
		if len(n) == 0 {
			b.WriteString("{}\n")
			return nil
		}
		keys := make([]string, 0, len(n))
		for k := range n {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 || !inSeq {
				b.WriteString(pad)
			}
			b.WriteString(yamlKey(k) + ":")
			if err := yamlValue(b, n[k], indent); err != nil {
				return err
			}
		}
	case []any:
		if len(n) == 0 {
			b.WriteString("[]\n")
			return nil
		}
		for _, item := range n {
			b.WriteString(pad + "- ")
			if err := yamlNode(b, item, indent+1, true); err != nil {
				return err
			}
		}
	default:
		s, err := yamlScalar(n)
		if err != nil {
			return err
		}
		b.WriteString(s + "\n")
	}
	return nil
}

// yamlValue writes the value of a mapping key: a scalar or empty
// collection on the key's line, anything else on the lines below.
func yamlValue(b *bytes.Buffer, v any, indent int) error {
	switch v := v.(type) {
	case map[string]any:
		if len(v) > 0 {
			b.WriteString("\n")
			return yamlNode(b, v, indent+1, false)
		}
	case []any:
		if len(v) > 0 {
			b.WriteString("\n")
			return yamlNode(b, v, indent, false) // "- " at the key's indent, as kubectl writes
		}
	}
	b.WriteString(" ")
	return yamlNode(b, v, indent, true)
}

func yamlScalar(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return yamlString(v), nil
	case json.Number:
		return v.String(), nil
	case bool:
		return strconv.FormatBool(v), nil
	case nil:
		return "null", nil
	}
	return "", fmt.Errorf("yaml: unexpected %T", v)
}

// isPlainKey: [A-Za-z][A-Za-z0-9._/-]*, a key YAML reads as the same
// string unquoted.
func isPlainKey(s string) bool {
	if len(s) == 0 || !(isLower(s[0]) || isUpper(s[0])) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLower(c) && !isUpper(c) && !isDigit(c) && c != '.' && c != '_' && c != '/' && c != '-' {
			return false
		}
	}
	return true
}

// yamlKey writes a mapping key bare when that is safe, else quoted.
func yamlKey(k string) string {
	if isPlainKey(k) && !yamlKeyword[strings.ToLower(k)] {
		return k
	}
	return yamlString(k)
}

// yamlKeyword: bare words YAML 1.1 readers take for booleans or null.
var yamlKeyword = map[string]bool{"y": true, "n": true, "yes": true, "no": true, "on": true, "off": true,
	"true": true, "false": true, "null": true}

// yamlString double-quotes s with JSON's escapes, which YAML reads alike.
func yamlString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// PodFromConfig is what `am render kubernetes --conf …` prints: the specs
// of cfg as the Kubernetes side reads them (SideKubernetes: a resource
// without kubernetes.config-key is reported), and opts with CPU and Memory
// taken from taskmanager.cpu.cores and taskmanager.memory.process.size
// where opts leaves them 0. Errors name the key and where it was set.
func PodFromConfig(cfg *conf.Config, opts PodOptions, parse resources.ParseOptions) ([]byte, error) {
	parse.Side = resources.SideKubernetes
	specs, err := resources.Parse(cfg, parse)
	if err != nil {
		return nil, err
	}
	if opts.CPU == 0 {
		if opts.CPU, err = cfg.Float(conf.TaskManagerCPUCores); err != nil {
			return nil, err
		}
	}
	if opts.Memory == 0 {
		if opts.Memory, err = cfg.MemorySize(conf.TaskManagerProcessSize); err != nil {
			return nil, err
		}
	}
	return RenderPod(specs, opts)
}
