package suggest

import (
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"gpu", "gpus", 1}, {"", "abc", 3}, {"amout", "amount", 1}, {"kitten", "sitting", 3}, {"gpü", "gpu", 1},
		{"sumbit", "submit", 1}, {"cnof", "conf", 1}, {"chek", "check", 1}, {"detatch", "detach", 1},
		{"wokers", "workers", 1}, {"ca", "abc", 3}, // optimal string alignment: no edit of a swapped pair
		{"fpga", "gpu", 3}, {"same", "same", 0},
	} {
		t.Run(tc.a+"/"+tc.b, func(t *testing.T) {
			require.Equal(t, tc.d, Distance(tc.a, tc.b))
			require.Equal(t, tc.d, Distance(tc.b, tc.a))
		})
	}
}

func TestClosest(t *testing.T) {
	cmds := []string{"submit", "run", "status", "list", "logs", "kill", "cluster", "resources", "render"}
	for _, tc := range []struct {
		word string
		want []string
	}{
		{"sumbit", []string{"submit"}},
		{"SUBMIT", []string{"submit"}}, // case ignored
		{"submit", nil},                // a candidate itself
		{"rnu", []string{"run"}},       // 3 runes: 1 edit
		{"rn", nil},                    // 2 runes: too short to guess
		{"lgs", []string{"logs"}},      // one deletion
		{"lsit", []string{"list"}},     // one swap
		{"deploy", nil},                // nothing near
		{"rendr", []string{"render"}},  // one of two at 1 and 2: the nearest
		{"lgos", []string{"logs"}},
	} {
		t.Run(tc.word, func(t *testing.T) {
			require.Equal(t, tc.want, Closest(tc.word, cmds, -1))
		})
	}
	require.Equal(t, []string{"check"}, Closest("chekc", []string{"probe", "check"}, 1))
	require.Nil(t, Closest("python", []string{"probe", "check"}, 1))
}

func TestDidYouMean(t *testing.T) {
	require.Equal(t, `did you mean "submit"?`, DidYouMean("sumbit", []string{"submit", "status"}))
	require.Equal(t, `did you mean "lust" or "last"?`, DidYouMean("lost", []string{"lust", "logs", "last"})) // a tie: both, in order
	require.Equal(t, `did you mean "abc", "abd" or "abe"?`, DidYouMean("abx", []string{"abc", "abd", "abe"}))
	require.Empty(t, DidYouMean("deploy", []string{"submit"}))
}

func TestFlagError(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Bool("detach", false, "")
	fs.Int("workers", 0, "")
	fs.String("D", "", "")
	for _, tc := range []struct{ arg, want string }{
		{"--detatch", "unknown flag --detatch; did you mean --detach?"},
		{"-wokers=3", "unknown flag --wokers; did you mean --workers?"},
		{"--bogus", "unknown flag --bogus"},
		{"-d", "unknown flag -d; did you mean -D?"}, // one letter: only its other case
		{"-x", "unknown flag -x"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			err := FlagError(fs, fs.Parse([]string{tc.arg}))
			require.EqualError(t, err, tc.want)
			var u *UnknownFlagError
			require.ErrorAs(t, err, &u)
		})
	}
	other := errors.New("flag needs an argument: -workers")
	require.Same(t, other, FlagError(fs, other))
	require.NoError(t, FlagError(fs, nil))
}
