package amstarts

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// In pilot mode a node's first start goes alone and the node's others wait
// until it is warm; then they go in batches. Other nodes are not held up,
// and a node warmed before its pilot went (a report from an adopted
// worker) has none.
func TestStartQueuePilot(t *testing.T) {
	q := New[string](10, 10, true)
	for _, c := range []string{"a1", "a2", "a3", "a4", "a5"} {
		q.Push("a", c)
	}
	q.Push("b", "b1")
	q.Push("b", "b2")

	first := q.Next(32)
	require.Equal(t, []string{"a1"}, first, "the pilot of node a")
	second := q.Next(32)
	require.Equal(t, []string{"b1"}, second, "the pilot of node b")
	require.Nil(t, q.Next(32), "both nodes wait for their pilots")
	require.True(t, q.Held("a"))

	q.Done("a")
	require.Nil(t, q.Next(32), "a pilot's start answered is not yet a warm node")
	require.True(t, q.Warm("a"))
	require.Equal(t, []string{"a2", "a3", "a4", "a5"}, q.Next(32), "node a's others in one batch")
	require.False(t, q.Warm("a"), "warm once")

	q.Push("c", "c1")
	q.Warm("c")
	require.Len(t, q.Next(32), 1)
	q.Push("c", "c2")
	q.Push("c", "c3")
	require.Len(t, q.Next(32), 2, "a node warm before its pilot has none")
}

// Without pilots: at most maxNode starts per node and maxAll overall are
// in flight, nodes served in turn, each start a batch of one node's items
// in their order; Done makes room again.
func TestStartQueueBounds(t *testing.T) {
	q := New[int](2, 1, false)
	require.True(t, q.Idle())
	for i := range 5 {
		q.Push("a", i)
	}
	q.Push("b", 10)
	q.Push("c", 20)
	require.Equal(t, []int{0, 1}, q.Next(2))
	require.Equal(t, []int{10}, q.Next(2), "the next node in turn")
	require.Nil(t, q.Next(2), "maxAll in flight")
	q.Done("a")
	require.Equal(t, []int{20}, q.Next(2), "c before a again: nodes in turn")
	q.Done("b")
	require.Equal(t, []int{2, 3}, q.Next(2))
	require.Nil(t, q.Next(2), "maxAll in flight")
	q.Done("c")
	require.Nil(t, q.Next(2), "node a has maxNode in flight")
	q.Done("a")
	require.Equal(t, []int{4}, q.Next(2))
	require.False(t, q.Idle())
	q.Done("a")
	require.True(t, q.Idle())
	require.False(t, q.Held("a"), "no pilot mode")
}
