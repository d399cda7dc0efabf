package conf

import (
	"fmt"
	"strings"
)

// SplitList splits a list value on ';' with the rules of Flink's
// StructuredOptionsSplitter (1.11+), which reads external-resources:
//
//   - blanks (bytes up to ' ') before an element are skipped and unquoted
//     elements trimmed: "gpu ; fpga" → [gpu fpga];
//   - an element may be quoted with ' or " (the quote doubled inside stands
//     for itself): "'a;b';c" → [a;b c];
//   - an empty element appears only between two consecutive ';': "a;;b" →
//     [a "" b]; a single leading or trailing ';' adds none; "" → [];
//   - a quote inside an unquoted element, or an unclosed quote, is an error
//     (wrapping ErrInvalid).
func SplitList(s string) ([]string, error) {
	type token struct {
		delim bool
		text  string
	}
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ';':
			toks = append(toks, token{delim: true})
			i++
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			closed := false
			for j < len(s) {
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						b.WriteByte(c)
						j += 2
						continue
					}
					closed = true
					j++
					break
				}
				b.WriteByte(s[j])
				j++
			}
			if !closed {
				return nil, &listError{fmt.Sprintf("quote at position %d is not closed", i)}
			}
			toks = append(toks, token{text: b.String()})
			i = j
		case c <= ' ':
			i++
		default:
			j := i
			for j < len(s) && s[j] != ';' {
				if s[j] == '\'' || s[j] == '"' {
					return nil, &listError{fmt.Sprintf("illegal quote at position %d (quote the whole element)", j)}
				}
				j++
			}
			toks = append(toks, token{text: trimBlanks(s[i:j])})
			i = j
		}
	}
	out := []string{}
	for i, t := range toks {
		if t.delim {
			if i+1 < len(toks) && toks[i+1].delim {
				out = append(out, "")
			}
			continue
		}
		out = append(out, t.text)
	}
	return out, nil
}

// listError is a malformed list value; it matches ErrInvalid.
type listError struct{ msg string }

func (e *listError) Error() string        { return e.msg }
func (e *listError) Is(target error) bool { return target == ErrInvalid }

// JoinList is SplitList's inverse: elements joined with ';', each quoted
// with ' when it holds ';', a quote, or leading or trailing blanks, or is
// empty.
func JoinList(elems []string) string {
	q := make([]string, len(elems))
	for i, e := range elems {
		q[i] = quoteElem(e, ";")
	}
	return strings.Join(q, ";")
}

// quoteElem quotes s with single quotes, as Flink escapes list and map
// elements, when it holds one of delims, a quote, or would lose blanks.
func quoteElem(s, delims string) string {
	if s != "" && !strings.ContainsAny(s, delims+"'\"") && trimBlanks(s) == s {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// trimBlanks trims bytes up to ' ' (control characters and space) from
// both ends, as Java's String.trim that Flink uses.
func trimBlanks(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}
