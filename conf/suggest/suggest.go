// Package suggest finds what a mistyped word was meant to be: the
// did-you-mean of am's and container-launcher's subcommands and flags, and
// of the configuration linter's keys, resource names and driver factories.
// The one edit distance all of them use is Distance.
package suggest

import (
	"flag"
	"fmt"
	"slices"
	"strings"
)

// Distance is the Damerau-Levenshtein distance between a and b in runes, in
// its optimal string alignment form: the fewest insertions, deletions,
// substitutions and swaps of two neighbours ("sumbit" → "submit" is one)
// that turn a into b, no substring edited twice.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows: the one before the previous is what a swap looks back to.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// Limit is how many edits a mistyped word may be from what it is taken
// for: none for a word of one or two runes (every such word is that close
// to many), 1 up to four runes, 2 beyond.
func Limit(word string) int {
	switch n := len([]rune(word)); {
	case n <= 2:
		return 0
	case n <= 4:
		return 1
	default:
		return 2
	}
}

// Closest returns the candidates nearest to word, case ignored, when they
// are at most limit edits away (limit < 0: Limit(word)), in the order given;
// none when word is itself a candidate.
func Closest(word string, candidates []string, limit int) []string {
	if limit < 0 {
		limit = Limit(word)
	}
	w := strings.ToLower(word)
	var best []string
	bestD := limit + 1
	for _, c := range candidates {
		if c == "" || slices.Contains(best, c) {
			continue
		}
		if c == word {
			return nil
		}
		d := Distance(w, strings.ToLower(c))
		switch {
		case d > limit:
		case d < bestD:
			best, bestD = []string{c}, d
		case d == bestD:
			best = append(best, c)
		}
	}
	return best
}

// DidYouMean is `did you mean "x"?` (`"x" or "y"` for a tie) for the
// candidates Closest finds for word, "" when none is close.
func DidYouMean(word string, candidates []string) string {
	return Phrase(Closest(word, candidates, -1), func(s string) string { return fmt.Sprintf("%q", s) })
}

// Phrase is `did you mean A?`, `did you mean A or B?`, `did you mean A,
// B or C?` for matches, each shown by show; "" for none.
func Phrase(matches []string, show func(string) string) string {
	if len(matches) == 0 {
		return ""
	}
	shown := make([]string, len(matches))
	for i, m := range matches {
		shown[i] = show(m)
	}
	last := shown[len(shown)-1]
	if len(shown) > 1 {
		last = strings.Join(shown[:len(shown)-1], ", ") + " or " + last
	}
	return "did you mean " + last + "?"
}

// FlagName is how a flag is written in messages: -D for a one-letter flag,
// --name for the others (both CLIs document their flags so; the flag
// package takes either).
func FlagName(name string) string {
	if len([]rune(name)) == 1 {
		return "-" + name
	}
	return "--" + name
}

// UnknownFlagError is an unknown flag on a command line, with the flags it
// may have meant.
type UnknownFlagError struct {
	Name  string   // as the flag package read it: without dashes or "=value"
	Maybe []string // the nearest flags of the set, by name
}

func (e *UnknownFlagError) Error() string {
	msg := "unknown flag " + FlagName(e.Name)
	if m := Phrase(e.Maybe, FlagName); m != "" {
		msg += "; " + m
	}
	return msg
}

// notDefined is how the flag package starts the error for a flag fs does
// not define ("flag provided but not defined: -name"), its only word for it.
const notDefined = "flag provided but not defined: -"

// FlagError is err, fs.Parse's error, with an unknown flag turned into an
// *UnknownFlagError naming the nearest flags of fs; any other error as it
// is.
func FlagError(fs *flag.FlagSet, err error) error {
	if err == nil {
		return nil
	}
	name, ok := strings.CutPrefix(err.Error(), notDefined)
	if !ok || name == "" || strings.ContainsAny(name, " \n") {
		return err
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return &UnknownFlagError{Name: name, Maybe: Closest(name, names, -1)}
}
