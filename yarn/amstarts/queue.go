// Package amstarts orders the ApplicationMaster's container starts (the
// allocate loop in yarn/am runs them): FIFO per NodeManager, nodes served
// in turn, bounded in flight overall and per node, and in pilot mode one
// container first on each new node.
package amstarts

// Queue orders the container starts: FIFO per NodeManager, nodes served
// in turn, at most maxAll starts (calls, each of up to a batch of one
// node's items) in flight overall and maxNode per node, so that a slow or
// dead NodeManager holds up only its own containers. It is not safe for
// concurrent use (the AM guards it with its mutex); every operation is
// O(1) (amortised).
type Queue[T any] struct {
	maxAll, maxNode int
	// pilot: on a node this application has not started a container on
	// yet, one container starts alone first (the pilot) and the node's
	// others wait until it is warm (Warm: the pilot's launcher reported,
	// or its start failed, or a wait passed). The NodeManager localizes
	// an application's files once per node, but every container that asks
	// for them while they download runs a localizer of its own that only
	// waits (and heartbeats) until they are there; started after the
	// pilot, the others find them localized and need none.
	pilot     bool
	inflight  int
	nodes     map[string]*nodeStarts[T]
	ready     []*nodeStarts[T] // nodes with waiting starts and room, each once
	readyHead int
}

type nodeStarts[T any] struct {
	waiting   []T
	head      int
	inflight  int
	isReady   bool
	pilotSent bool // the pilot went (pilot mode)
	warm      bool // the others may go (pilot mode)
}

// New returns an empty queue with those bounds, in pilot mode or not.
func New[T any](maxAll, maxNode int, pilot bool) *Queue[T] {
	return &Queue[T]{maxAll: maxAll, maxNode: maxNode, pilot: pilot, nodes: map[string]*nodeStarts[T]{}}
}

// Pilot says whether the queue is in pilot mode.
func (q *Queue[T]) Pilot() bool { return q.pilot }

// isHeld says whether n's waiting starts wait for its pilot.
func (q *Queue[T]) isHeld(n *nodeStarts[T]) bool {
	return q.pilot && n.pilotSent && !n.warm
}

// Held says whether node's starts wait for its pilot.
func (q *Queue[T]) Held(node string) bool {
	n := q.nodes[node]
	return n != nil && q.isHeld(n)
}

// Warm lets node's waiting starts go (pilot mode); it reports whether the
// node was held.
func (q *Queue[T]) Warm(node string) bool {
	n := q.node(node)
	was := q.isHeld(n)
	n.warm = true
	q.markReady(n)
	return was
}

func (q *Queue[T]) node(node string) *nodeStarts[T] {
	n := q.nodes[node]
	if n == nil {
		n = &nodeStarts[T]{}
		q.nodes[node] = n
	}
	return n
}

// Push queues item's start on node.
func (q *Queue[T]) Push(node string, item T) {
	n := q.node(node)
	n.waiting = append(n.waiting, item)
	q.markReady(n)
}

func (q *Queue[T]) markReady(n *nodeStarts[T]) {
	if !n.isReady && n.head < len(n.waiting) && n.inflight < q.maxNode && !q.isHeld(n) {
		n.isReady = true
		q.ready = append(q.ready, n)
	}
}

// Next takes the next start to run: up to batch waiting items of one
// node, as one start in flight; nil when none may run now. The caller runs
// it and calls Done with that node.
func (q *Queue[T]) Next(batch int) []T {
	if q.inflight >= q.maxAll || q.readyHead == len(q.ready) {
		return nil
	}
	n := q.ready[q.readyHead]
	q.ready[q.readyHead] = nil
	q.readyHead++
	if q.readyHead == len(q.ready) {
		q.ready, q.readyHead = q.ready[:0], 0
	}
	n.isReady = false
	if q.pilot && !n.warm {
		batch, n.pilotSent = 1, true
	}
	k := min(batch, len(n.waiting)-n.head)
	out := make([]T, k)
	copy(out, n.waiting[n.head:n.head+k])
	clear(n.waiting[n.head : n.head+k])
	n.head += k
	if n.head == len(n.waiting) {
		n.waiting, n.head = n.waiting[:0], 0
	}
	n.inflight++
	q.inflight++
	q.markReady(n)
	return out
}

// Done ends a start of node that Next handed out.
func (q *Queue[T]) Done(node string) {
	n := q.nodes[node]
	n.inflight--
	q.inflight--
	q.markReady(n)
}

// Idle says whether no start is in flight and none may run now.
func (q *Queue[T]) Idle() bool {
	return q.inflight == 0 && q.readyHead == len(q.ready)
}
