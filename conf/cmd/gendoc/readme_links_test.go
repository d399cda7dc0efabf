package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// userDocs lists, relative to root, the Markdown files a user reads: README.md,
// docs/*.md, and the commands' and the test cluster's READMEs.
func userDocs(t *testing.T, root string) []string {
	t.Helper()
	docs := []string{"README.md", "CONTRACT.md", filepath.Join("docker", "hadoop-minicluster", "README.md")}
	for _, glob := range []string{filepath.Join("docs", "*.md"), filepath.Join("cmd", "*", "README.md")} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		require.NoError(t, err)
		for _, p := range m {
			rel, err := filepath.Rel(root, p)
			require.NoError(t, err)
			docs = append(docs, rel)
		}
	}
	var found []string
	for _, d := range docs {
		if _, err := os.Stat(filepath.Join(root, d)); err == nil {
			found = append(found, d)
		}
	}
	require.Contains(t, found, filepath.Join("docs", "configuration.md"), "docs/ holds the configuration reference")
	return found
}

var (
	fenceRE   = regexp.MustCompile("^\\s*(```|~~~)")
	codeRE    = regexp.MustCompile("`+[^`]*`+")
	linkRE    = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// proseLines returns the lines of a Markdown file outside fenced code
// blocks, each with its 1-based line number.
func proseLines(text string) (lines []string, numbers []int) {
	in := false
	for i, l := range strings.Split(text, "\n") {
		if fenceRE.MatchString(l) {
			in = !in
			continue
		}
		if !in {
			lines = append(lines, l)
			numbers = append(numbers, i+1)
		}
	}
	return lines, numbers
}

// slug is GitHub's anchor for a heading: lower case, markup and punctuation
// dropped (letters, digits, '-' and '_' kept), each space a '-'.
func slug(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns every heading anchor of a Markdown text, duplicates
// numbered as GitHub numbers them (x, x-1, x-2).
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	lines, _ := proseLines(text)
	for _, l := range lines {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// brokenLinks returns, for the Markdown file doc (relative to root), every
// relative link whose file does not exist or whose #anchor is no heading of
// its target, as "doc:line: target (why)".
func brokenLinks(t *testing.T, root, doc string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, doc))
	require.NoError(t, err)
	lines, numbers := proseLines(string(b))
	var broken []string
	for i, l := range lines {
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(l, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := filepath.Join(root, doc)
			if file != "" {
				path = filepath.Join(root, filepath.Dir(doc), filepath.FromSlash(file))
			}
			where := fmt.Sprintf("%s:%d: %s", doc, numbers[i], target)
			if _, err := os.Stat(path); err != nil {
				broken = append(broken, where+" (no such file)")
				continue
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				broken = append(broken, where+" (an anchor into a file that is not Markdown)")
				continue
			}
			text, err := os.ReadFile(path)
			require.NoError(t, err)
			if !anchors(string(text))[anchor] {
				broken = append(broken, where+" (no such heading)")
			}
		}
	}
	return broken
}

// TestReadmeLinksResolve: every relative link of README.md, docs/*.md and the
// commands' READMEs names a file that exists, and its #anchor a heading of
// that file (GitHub's slugs), so moving a section cannot leave a dead link.
func TestReadmeLinksResolve(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	var broken []string
	for _, doc := range userDocs(t, root) {
		broken = append(broken, brokenLinks(t, root, doc)...)
	}
	require.Empty(t, broken, "broken links")
}

// TestLinkCheckerFindsBrokenLinks: the checker itself, on a fixture with a
// link of each kind, good and bad.
func TestLinkCheckerFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "docs", "a.md"), []byte(
		"# A doc\n\n## Flink `config.yaml` & more\n\n## Flink's own AM\n\n## Twice\n\n## Twice\n\n```\n## Not a heading\n```\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "README.md"), []byte(strings.Join([]string{
		"# Top",
		"[ok](docs/a.md) [ok](docs/a.md#flink-configyaml--more) [ok](docs/a.md#flinks-own-am)",
		"[ok](docs/a.md#twice-1) [ok](#top) [ok](https://example.com/x.md#nope) `[code](nowhere.md)`",
		"[bad](docs/b.md) [bad](docs/a.md#twice-2) [bad](#nope) [bad](docs/a.md#not-a-heading)",
		"```",
		"[in code](nowhere.md)",
		"```",
	}, "\n")), 0o644))
	got := brokenLinks(t, root, "README.md")
	require.Equal(t, []string{
		"README.md:4: docs/b.md (no such file)",
		"README.md:4: docs/a.md#twice-2 (no such heading)",
		"README.md:4: #nope (no such heading)",
		"README.md:4: docs/a.md#not-a-heading (no such heading)",
	}, got)
}
