// Package amwebtest reads the AM's tracking page in tests: its timeline SVG
// parsed as XML, and the page served by a tracker handler.
package amwebtest

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Node is any element of the page's SVG, parsed with encoding/xml.
type Node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []Node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

// Attr returns the value of attribute name, "" when absent.
func (n Node) Attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// Num returns attribute name as a number, failing t when it is not one.
func (n Node) Num(t testing.TB, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.Attr(name), 64)
	require.NoError(t, err, "<%s %s=%q>", n.XMLName.Local, name, n.Attr(name))
	return v
}

// All returns the elements under n (n too) that match.
func (n Node) All(match func(Node) bool) []Node {
	var out []Node
	if match(n) {
		out = append(out, n)
	}
	for _, c := range n.Nodes {
		out = append(out, c.All(match)...)
	}
	return out
}

// Child returns n's first child element named local (a zero Node if none).
func (n Node) Child(local string) Node {
	for _, c := range n.Nodes {
		if c.XMLName.Local == local {
			return c
		}
	}
	return Node{}
}

// ByClass matches elements named local with class (or a class starting
// with class+"-"); class "" matches every element named local.
func ByClass(local, class string) func(Node) bool {
	return func(n Node) bool {
		if n.XMLName.Local != local {
			return false
		}
		for _, c := range strings.Fields(n.Attr("class")) {
			if class == "" || c == class || strings.HasPrefix(c, class+"-") {
				return true
			}
		}
		return class == ""
	}
}

// GetPage serves h (a tracker) and returns its page at "/".
func GetPage(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	return string(body)
}

// TimelineSVG parses the page's timeline drawing: it must be well-formed XML.
func TimelineSVG(t testing.TB, page string) Node {
	t.Helper()
	i := strings.Index(page, `<svg id="timeline-svg"`)
	require.GreaterOrEqual(t, i, 0, "no timeline SVG in the page:\n%s", page)
	j := strings.Index(page[i:], "</svg>")
	require.Greater(t, j, 0, "the SVG does not end")
	var svg Node
	require.NoError(t, xml.Unmarshal([]byte(page[i:i+j+len("</svg>")]), &svg), page[i:i+j+len("</svg>")])
	return svg
}
