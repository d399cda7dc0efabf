package conf

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGroupOverlay(t *testing.T) {
	c := New()
	c.Set("external-resource.gpu.amount", "1")
	c.Set("taskmanager.memory.process.size", "1g")
	c.Set("xres.worker-group.trainer.external-resource.gpu.amount", "4")
	c.Set("xres.worker-group.prep.external-resources", "fpga")

	tr := c.Group("trainer")
	v, _ := tr.Get("external-resource.gpu.amount")
	require.Equal(t, "4", v, "the group's key wins")
	v, _ = tr.Get("taskmanager.memory.process.size")
	require.Equal(t, "1g", v, "a plain key is inherited")
	_, set := tr.Get("external-resources")
	require.False(t, set, "another group's key does not leak")
	v, _ = c.Get("external-resource.gpu.amount")
	require.Equal(t, "1", v, "the original is untouched")
	require.Same(t, c, c.Group(""))
}

func TestWorkerGroupNames(t *testing.T) {
	c := New()
	names, err := c.WorkerGroupNames()
	require.NoError(t, err)
	require.Nil(t, names)

	c.Set(WorkerGroups.Key, "trainer; prep;cpu-only")
	names, err = c.WorkerGroupNames()
	require.NoError(t, err)
	require.Equal(t, []string{"trainer", "prep", "cpu-only"}, names)

	for _, bad := range []string{"a;a", "a.b", "a;;b", ""} {
		c.Set(WorkerGroups.Key, bad)
		_, err = c.WorkerGroupNames()
		require.ErrorIs(t, err, ErrInvalid, bad)
		require.ErrorContains(t, err, WorkerGroups.Key)
	}
}

func TestSplitCommand(t *testing.T) {
	for in, want := range map[string][]string{
		"python train.py --epochs 3": {"python", "train.py", "--epochs", "3"},
		`bash -c 'echo $A; sleep 1'`: {"bash", "-c", "echo $A; sleep 1"},
		`echo "a \"b\" \$c" d\ e`:    {"echo", `a "b" $c`, "d e"},
		`  x  ''  `:                  {"x", ""},
		`a"b"'c'`:                    {"abc"},
		"":                           nil,
	} {
		got, err := SplitCommand(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{`a 'b`, `a "b`, `a\`} {
		_, err := SplitCommand(bad)
		require.ErrorIs(t, err, ErrInvalid, bad)
	}
}
