package am

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// In pilot mode a node's first start goes alone and the node's others wait
// until it is warm; then they go in batches. Other nodes are not held up,
// and a node warmed before its pilot went (a report from an adopted
// worker) has none.
func TestStartQueuePilot(t *testing.T) {
	q := newStartQueue(10, 10)
	q.pilot = true
	for i := range 5 {
		q.push(&worker{c: ctr(i+2, "a")})
	}
	q.push(&worker{c: ctr(9, "b")})
	q.push(&worker{c: ctr(10, "b")})

	first := q.next(32)
	require.Len(t, first, 1, "the pilot of node a")
	second := q.next(32)
	require.Len(t, second, 1, "the pilot of node b")
	require.Nil(t, q.next(32), "both nodes wait for their pilots")
	require.True(t, q.held("a:45454"))

	q.done(first)
	require.Nil(t, q.next(32), "a pilot's start answered is not yet a warm node")
	require.True(t, q.warm("a:45454"))
	rest := q.next(32)
	require.Len(t, rest, 4, "node a's others in one batch")
	require.Equal(t, "a:45454", rest[0].c.NodeID)
	require.False(t, q.warm("a:45454"), "warm once")

	q.push(&worker{c: ctr(11, "c")})
	q.warm("c:45454")
	require.Len(t, q.next(32), 1)
	q.push(&worker{c: ctr(12, "c")})
	q.push(&worker{c: ctr(13, "c")})
	require.Len(t, q.next(32), 2, "a node warm before its pilot has none")
}
