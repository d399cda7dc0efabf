package am

// startQueue orders the container starts: FIFO per NodeManager, nodes
// served in turn, at most maxAll starts (calls, each of up to a batch of one
// node's containers) in flight overall and maxNode per node, so that a slow or dead NodeManager holds up only its own
// containers. It is guarded by the AM's mutex; every operation is O(1)
// (amortised).
type startQueue struct {
	maxAll, maxNode int
	// pilot: on a node this application has not started a container on
	// yet, one container starts alone first (the pilot) and the node's
	// others wait until it is warm (warm: the pilot's launcher reported,
	// or its start failed, or pilotWait passed). The NodeManager localizes
	// an application's files once per node, but every container that asks
	// for them while they download runs a localizer of its own that only
	// waits (and heartbeats) until they are there; started after the
	// pilot, the others find them localized and need none.
	pilot     bool
	inflight  int
	nodes     map[string]*nodeStarts
	ready     []*nodeStarts // nodes with waiting starts and room, each once
	readyHead int
}

type nodeStarts struct {
	waiting   []*worker
	head      int
	inflight  int
	isReady   bool
	pilotSent bool // the pilot went (pilot mode)
	warm      bool // the others may go (pilot mode)
}

// isHeld says whether n's waiting starts wait for its pilot.
func (q *startQueue) isHeld(n *nodeStarts) bool {
	return q.pilot && n.pilotSent && !n.warm
}

// held says whether node's starts wait for its pilot.
func (q *startQueue) held(node string) bool {
	n := q.nodes[node]
	return n != nil && q.isHeld(n)
}

// warm lets node's waiting starts go (pilot mode); it reports whether the
// node was held.
func (q *startQueue) warm(node string) bool {
	n := q.nodes[node]
	if n == nil {
		n = &nodeStarts{}
		q.nodes[node] = n
	}
	was := q.isHeld(n)
	n.warm = true
	q.markReady(n)
	return was
}

func newStartQueue(maxAll, maxNode int) startQueue {
	return startQueue{maxAll: maxAll, maxNode: maxNode, nodes: map[string]*nodeStarts{}}
}

// push queues w's start on its node.
func (q *startQueue) push(w *worker) {
	n := q.nodes[w.c.NodeID]
	if n == nil {
		n = &nodeStarts{}
		q.nodes[w.c.NodeID] = n
	}
	n.waiting = append(n.waiting, w)
	q.markReady(n)
}

func (q *startQueue) markReady(n *nodeStarts) {
	if !n.isReady && n.head < len(n.waiting) && n.inflight < q.maxNode && !q.isHeld(n) {
		n.isReady = true
		q.ready = append(q.ready, n)
	}
}

// next takes the next start to run: up to batch waiting workers of one
// node, as one start in flight; nil when none may run now. The caller runs
// it and calls done.
func (q *startQueue) next(batch int) []*worker {
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
	ws := make([]*worker, k)
	copy(ws, n.waiting[n.head:n.head+k])
	clear(n.waiting[n.head : n.head+k])
	n.head += k
	if n.head == len(n.waiting) {
		n.waiting, n.head = n.waiting[:0], 0
	}
	n.inflight++
	q.inflight++
	q.markReady(n)
	return ws
}

// done ends a start that next handed out.
func (q *startQueue) done(ws []*worker) {
	n := q.nodes[ws[0].c.NodeID]
	n.inflight--
	q.inflight--
	q.markReady(n)
}
