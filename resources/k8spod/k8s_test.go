package k8spod

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/resources"
)

var updatePod = flag.Bool("update", false, "rewrite testdata/pod.golden.yaml")

// The core/v1 Pod as the Kubernetes API reference describes the fields
// RenderPod may write (Pod, ObjectMeta, PodSpec, Container, EnvVar,
// ResourceRequirements), written here independently of RenderPod's own
// types: decoding with unknown fields disallowed catches a misspelt or
// misplaced field, and validatePod the reference's rules for the values.
type (
	refPod struct {
		APIVersion string        `json:"apiVersion"`
		Kind       string        `json:"kind"`
		Metadata   refObjectMeta `json:"metadata"`
		Spec       refPodSpec    `json:"spec"`
	}
	refObjectMeta struct {
		Name         string            `json:"name"`
		GenerateName string            `json:"generateName"`
		Namespace    string            `json:"namespace"`
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
	}
	refPodSpec struct {
		RestartPolicy string         `json:"restartPolicy"`
		Containers    []refContainer `json:"containers"`
	}
	refContainer struct {
		Name       string                  `json:"name"`
		Image      string                  `json:"image"`
		Command    []string                `json:"command"`
		Args       []string                `json:"args"`
		WorkingDir string                  `json:"workingDir"`
		Env        []refEnvVar             `json:"env"`
		Resources  refResourceRequirements `json:"resources"`
	}
	refEnvVar struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	refResourceRequirements struct {
		Limits   map[string]string `json:"limits"`
		Requests map[string]string `json:"requests"`
	}
)

var (
	refDNSLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	refDNSSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	refQualifiedNm  = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	refLabelValue   = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)
	// The quantity grammar of the API reference: sign, number, then a
	// binary or decimal SI suffix or an exponent.
	refQuantity = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$`)
	refEnvName  = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)
)

// validatePod checks a pod against the API reference's rules for what
// RenderPod writes; it returns every violation.
func validatePod(p refPod) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	if p.APIVersion != "v1" || p.Kind != "Pod" {
		add("apiVersion/kind %s/%s, want v1/Pod", p.APIVersion, p.Kind)
	}
	if n := p.Metadata.Name; len(n) > 253 || !refDNSSubdomain.MatchString(n) {
		add("metadata.name %q is not a DNS-1123 subdomain", n)
	}
	for k, v := range p.Metadata.Labels {
		name := k
		if i := strings.LastIndex(k, "/"); i >= 0 {
			if prefix := k[:i]; len(prefix) > 253 || !refDNSSubdomain.MatchString(prefix) {
				add("label key %q: bad prefix", k)
			}
			name = k[i+1:]
		}
		if len(name) > 63 || !refQualifiedNm.MatchString(name) {
			add("label key %q: bad name", k)
		}
		if len(v) > 63 || !refLabelValue.MatchString(v) {
			add("label %q: bad value %q", k, v)
		}
	}
	switch p.Spec.RestartPolicy {
	case "Always", "OnFailure", "Never":
	default:
		add("spec.restartPolicy %q", p.Spec.RestartPolicy)
	}
	if len(p.Spec.Containers) == 0 {
		add("spec.containers is empty")
	}
	for _, c := range p.Spec.Containers {
		if len(c.Name) > 63 || !refDNSLabel.MatchString(c.Name) {
			add("container name %q is not a DNS-1123 label", c.Name)
		}
		if c.Image == "" {
			add("container %s: no image", c.Name)
		}
		for _, e := range c.Env {
			if !refEnvName.MatchString(e.Name) {
				add("container %s: env name %q", c.Name, e.Name)
			}
		}
		for _, m := range []map[string]string{c.Resources.Requests, c.Resources.Limits} {
			for name, q := range m {
				if !refQuantity.MatchString(q) {
					add("resource %s: %q is not a quantity", name, q)
				}
				if isNativeResource(name) {
					continue
				}
				// An extended resource: a fully-qualified name outside
				// kubernetes.io, a whole number, requests equal to limits.
				domain, _, ok := strings.Cut(name, "/")
				if !ok || !refDNSSubdomain.MatchString(domain) || strings.HasSuffix(domain, "kubernetes.io") {
					add("extended resource %q is not a fully-qualified name outside kubernetes.io", name)
				}
				if _, err := strconv.ParseInt(q, 10, 64); err != nil {
					add("extended resource %s: %q is not a whole number", name, q)
				}
				if c.Resources.Requests[name] != c.Resources.Limits[name] {
					add("extended resource %s: requests %q != limits %q", name, c.Resources.Requests[name], c.Resources.Limits[name])
				}
			}
		}
	}
	return bad
}

func isNativeResource(name string) bool {
	return name == "cpu" || name == "memory" || name == "ephemeral-storage" || strings.HasPrefix(name, "hugepages-")
}

// decodePod reads a pod template with readYAML and decodes it strictly.
func decodePod(t *testing.T, doc []byte) refPod {
	t.Helper()
	tree := readYAML(t, doc)
	raw, err := json.Marshal(tree)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p refPod
	require.NoError(t, dec.Decode(&p), "pod template is not a core/v1 Pod:\n%s", doc)
	return p
}

func testPodOptions() PodOptions {
	return PodOptions{
		Image:        "flink:1.19-java17",
		LauncherArgs: []string{"--conf", "/opt/flink/conf"},
		Worker:       []string{"/opt/flink/bin/taskmanager.sh", "start-foreground"},
		CPU:          1.5,
		Memory:       1728 << 20,
		Env:          map[string]string{"FLINK_PROPERTIES": "a: b\n\"c\": 'd' # e"},
	}
}

func TestRenderPodIsAValidPod(t *testing.T) {
	specs := []resources.Spec{
		{Name: "fpga", Amount: 1},
		{Name: "gpu", Amount: 2, K8sKey: "nvidia.com/gpu"},
		{Name: "rdma", Amount: 4, K8sKey: "rdma/hca"},
	}
	out, err := RenderPod(specs, testPodOptions())
	require.NoError(t, err)
	golden := filepath.Join("testdata", "pod.golden.yaml")
	if *updatePod {
		require.NoError(t, os.WriteFile(golden, out, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	require.Equal(t, string(want), string(out), "rerun with -update after a deliberate change")

	p := decodePod(t, out)
	require.Empty(t, validatePod(p))
	c := p.Spec.Containers[0]
	want2 := map[string]string{"nvidia.com/gpu": "2", "rdma/hca": "4", "cpu": "1500m", "memory": strconv.Itoa(1728 << 20)}
	require.Equal(t, want2, c.Resources.Requests)
	require.Equal(t, want2, c.Resources.Limits)
	require.Equal(t, []string{"container-launcher"}, c.Command)
	require.Equal(t, []string{"--conf", "/opt/flink/conf", "--", "/opt/flink/bin/taskmanager.sh", "start-foreground"}, c.Args)
	require.Equal(t, []refEnvVar{{Name: "FLINK_PROPERTIES", Value: "a: b\n\"c\": 'd' # e"}}, c.Env, "a value with YAML syntax survives")
	require.Contains(t, string(out), "# Not requested (no kubernetes.config-key): fpga")
}

// TestValidatePodCatches: the schema check fails on what kubectl would
// refuse, so that a passing check means something.
func TestValidatePodCatches(t *testing.T) {
	good, err := RenderPod([]resources.Spec{{Name: "gpu", Amount: 1, K8sKey: "nvidia.com/gpu"}}, testPodOptions())
	require.NoError(t, err)
	require.Empty(t, validatePod(decodePod(t, good)))
	for _, tc := range []struct{ name, from, to, want string }{
		{"unequal extended resource", `nvidia.com/gpu: "1"` + "\n      requests", `nvidia.com/gpu: "2"` + "\n      requests", "requests \"1\" != limits \"2\""},
		{"unqualified extended resource", `nvidia.com/gpu:`, `gpu:`, "not a fully-qualified name"},
		{"bad quantity", `"1500m"`, `"1.5 cores"`, "not a quantity"},
		{"bad restart policy", `"Never"`, `"never"`, "restartPolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(string(good), tc.from, tc.to, 1)
			require.NotEqual(t, string(good), doc, "edit applies")
			require.Contains(t, strings.Join(validatePod(decodePod(t, []byte(doc))), "; "), tc.want)
		})
	}
	// A misplaced field fails the strict decoding.
	doc := strings.Replace(string(good), "  restartPolicy:", "  policy:", 1)
	var p refPod
	raw, err := json.Marshal(readYAML(t, []byte(doc)))
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.ErrorContains(t, dec.Decode(&p), "unknown field")
}

func TestRenderPodErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*PodOptions)
		want string
	}{
		{"no image", func(o *PodOptions) { o.Image = " " }, "no image"},
		{"no worker", func(o *PodOptions) { o.Worker = nil }, "no worker command"},
		{"bad name", func(o *PodOptions) { o.Name = "Worker_1" }, `pod name "Worker_1"`},
		{"bad env", func(o *PodOptions) { o.Env = map[string]string{"A=B": "x"} }, `environment variable name "A=B"`},
		{"negative cpu", func(o *PodOptions) { o.CPU = -1 }, "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testPodOptions()
			tc.edit(&o)
			_, err := RenderPod(nil, o)
			require.ErrorIs(t, err, ErrPodTemplate)
			require.ErrorContains(t, err, tc.want)
		})
	}
	out, err := RenderPod(nil, PodOptions{Image: "i", Worker: []string{"w"}})
	require.NoError(t, err)
	p := decodePod(t, out)
	require.Empty(t, validatePod(p))
	require.Empty(t, p.Spec.Containers[0].Resources.Requests, "no resources, no cpu, no memory: nothing requested")
}

// yamlMapItem: a sequence item that starts a mapping (key: ...).
var yamlMapItem = regexp.MustCompile(`^("([^"\\]|\\.)*"|[A-Za-z][A-Za-z0-9._/-]*):( |$)`)

// readYAML reads the block YAML subset RenderPod writes (and kubectl
// reads): "# comments", "key: value" mappings, "- item" sequences (at
// the key's indent or deeper), double-quoted strings with JSON's escapes,
// bare keys, {} and [].
func readYAML(t *testing.T, doc []byte) any {
	t.Helper()
	type line struct {
		indent int
		text   string
		no     int
	}
	var lines []line
	for i, l := range strings.Split(string(doc), "\n") {
		trimmed := strings.TrimLeft(l, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		lines = append(lines, line{len(l) - len(trimmed), strings.TrimRight(trimmed, " "), i + 1})
	}
	pos := 0
	scalar := func(s string, no int) any {
		switch {
		case s == "{}":
			return map[string]any{}
		case s == "[]":
			return []any{}
		case strings.HasPrefix(s, `"`):
			var v string
			require.NoError(t, json.Unmarshal([]byte(s), &v), "line %d: %s", no, s)
			return v
		}
		require.Regexp(t, `^[-0-9a-zA-Z.]+$`, s, "line %d: a bare scalar", no)
		return s
	}
	key := func(s string, no int) (string, string) {
		if strings.HasPrefix(s, `"`) {
			end := strings.Index(s[1:], `":`)
			require.GreaterOrEqual(t, end, 0, "line %d", no)
			var k string
			require.NoError(t, json.Unmarshal([]byte(s[:end+2]), &k))
			return k, strings.TrimSpace(s[end+3:])
		}
		k, rest, ok := strings.Cut(s, ":")
		require.True(t, ok, "line %d: %q is not key: value", no, s)
		return k, strings.TrimSpace(rest)
	}
	var node func(indent int) any
	mapping := func(indent int, first string, no int) map[string]any {
		m := map[string]any{}
		put := func(text string, no int) {
			k, rest := key(text, no)
			_, dup := m[k]
			require.False(t, dup, "line %d: key %s twice", no, k)
			if rest != "" {
				m[k] = scalar(rest, no)
				return
			}
			// The value is on the lines below: deeper, or a sequence at the
			// key's indent.
			require.Less(t, pos, len(lines), "line %d: no value", no)
			next := lines[pos]
			require.True(t, next.indent > indent || (next.indent == indent && strings.HasPrefix(next.text, "- ")), "line %d: no value", no)
			m[k] = node(next.indent)
		}
		put(first, no)
		for pos < len(lines) && lines[pos].indent == indent && !strings.HasPrefix(lines[pos].text, "- ") {
			l := lines[pos]
			pos++
			put(l.text, l.no)
		}
		return m
	}
	node = func(indent int) any {
		l := lines[pos]
		if strings.HasPrefix(l.text, "- ") {
			var seq []any
			for pos < len(lines) && lines[pos].indent == indent && strings.HasPrefix(lines[pos].text, "- ") {
				l := lines[pos]
				pos++
				item := l.text[2:]
				if yamlMapItem.MatchString(item) {
					seq = append(seq, mapping(indent+2, item, l.no))
				} else {
					seq = append(seq, scalar(item, l.no))
				}
			}
			return seq
		}
		pos++
		return mapping(indent, l.text, l.no)
	}
	v := node(0)
	require.Equal(t, len(lines), pos, "line %d: unexpected indentation", lines[min(pos, len(lines)-1)].no)
	return v
}

func TestPodFromConfig(t *testing.T) {
	cfg := conf.New()
	for k, v := range map[string]string{
		"external-resources":                           "gpu",
		"external-resource.gpu.amount":                 "2",
		"external-resource.gpu.kubernetes.config-key":  "nvidia.com/gpu",
		"external-resource.gpu.driver-factory.class":   "org.apache.flink.externalresource.gpu.GPUDriverFactory",
		"taskmanager.memory.process.size":              "1728m",
		"taskmanager.cpu.cores":                        "2",
		"external-resource.gpu.param.discovery.source": "nvml",
	} {
		cfg.Set(k, v)
	}
	out, err := PodFromConfig(cfg, PodOptions{Image: "img", Worker: []string{"w"}}, resources.ParseOptions{})
	require.NoError(t, err)
	c := decodePod(t, out).Spec.Containers[0]
	require.Equal(t, map[string]string{"nvidia.com/gpu": "2", "cpu": "2000m", "memory": strconv.Itoa(1728 << 20)}, c.Resources.Limits)

	cfg.Set("taskmanager.cpu.cores", "two")
	_, err = PodFromConfig(cfg, PodOptions{Image: "img", Worker: []string{"w"}}, resources.ParseOptions{})
	require.ErrorContains(t, err, "taskmanager.cpu.cores")
	cfg.Set("taskmanager.cpu.cores", "2")
	cfg.Set("external-resource.gpu.kubernetes.config-key", "")
	_, err = PodFromConfig(cfg, PodOptions{Image: "img", Worker: []string{"w"}}, resources.ParseOptions{Strict: true})
	require.ErrorContains(t, err, "kubernetes.config-key", "strict: a resource Kubernetes is not asked for is an error")
}
