// Package amnodes is what the ApplicationMaster's allocate loop (yarn/am)
// knows of the cluster's nodes: their states and node list, the node
// count the RM reports, and the blacklist of hosts whose
// container-launcher failed, with why, until when, and what the RM has
// been told of it. It answers the loop's questions (which hosts can run a
// group's ask, which to name in it, whether a host is the last one left);
// the loop decides what to do with the answers.
package amnodes

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/xres/xres/yarn"
)

// goneStates are the node states whose workers are replaced at once,
// before the RM reports their containers completed. A DECOMMISSIONING
// node's workers run on (graceful decommission lets them finish; the RM
// ends those still running when the node is DECOMMISSIONED), and so do an
// UNHEALTHY node's (a health check that flaps must not kill healthy
// workers; when the RM takes the node out of scheduling it completes
// their containers as ABORTED, which replaces them without counting).
func gone(state string) bool {
	return state == "LOST" || state == "DECOMMISSIONED" || state == "SHUTDOWN"
}

// Usable says whether a node in state may still run a worker.
func Usable(state string) bool {
	return !gone(state) && state != "DECOMMISSIONING"
}

// MaxLocalityHosts bounds the hosts an ask names (Locality): beyond it the
// ask is ANY alone.
const MaxLocalityHosts = 500

// Cause is why a host was blacklisted, read when a diagnostic quotes it
// (a failed worker's stderr tail may arrive after the blacklisting).
type Cause interface {
	BlacklistWhy() string
}

// Nodes is the AM's view of the cluster's nodes and its blacklist. The
// zero value is not usable: New makes one. It is not safe for concurrent
// use; the AM holds its lock around every call.
type Nodes[C Cause] struct {
	cluster int               // num_cluster_nodes of the last heartbeat
	list    []yarn.NodeReport // the node list; nil: not known
	stale   bool              // the blacklist or the cluster changed since list was read
	read    bool              // list was read (or tried) once

	hosts  map[string]bool      // blacklisted hosts
	sent   map[string]bool      // blacklisted hosts the RM was told of
	until  map[string]time.Time // blacklisted host → when it expires (absent: never)
	by     map[string]C         // blacklisted host → why
	remove []string             // expired hosts the RM is still to be told
}

// New returns an empty view: no node known, none blacklisted.
func New[C Cause]() *Nodes[C] {
	return &Nodes[C]{hosts: map[string]bool{}, sent: map[string]bool{}, until: map[string]time.Time{}, by: map[string]C{}}
}

// Heartbeat takes in a heartbeat's view of the cluster: its node count
// (0: not sent) and the nodes that changed state. It returns the nodes
// now gone (LOST, DECOMMISSIONED, SHUTDOWN) with their state; nil if none.
func (n *Nodes[C]) Heartbeat(clusterNodes int, updated []yarn.NodeUpdate) map[string]string {
	if clusterNodes > 0 {
		if clusterNodes != n.cluster {
			n.stale = true
		}
		n.cluster = clusterNodes
	}
	if len(updated) > 0 {
		n.stale = true
	}
	var out map[string]string
	for _, u := range updated {
		if gone(u.State) {
			if out == nil {
				out = map[string]string{}
			}
			out[u.NodeID] = u.State
		}
	}
	return out
}

// Cluster is the node count of the last heartbeat that sent one.
func (n *Nodes[C]) Cluster() int { return n.cluster }

// Listed says whether the node list is known.
func (n *Nodes[C]) Listed() bool { return n.list != nil }

// ToRead says whether the node list is to be read now (by a caller with a
// lister): at first, and again while hosts are blacklisted when the
// blacklist or the cluster changed since the last read. A true answer
// counts as the read begun.
func (n *Nodes[C]) ToRead() bool {
	if n.read && (!n.stale || len(n.hosts) == 0) {
		return false
	}
	n.read, n.stale = true, false
	return true
}

// SetList keeps a node list just read.
func (n *Nodes[C]) SetList(list []yarn.NodeReport) {
	if list == nil {
		list = []yarn.NodeReport{}
	}
	n.list = list
}

// Blacklist keeps host off the asks until until (for ever when zero),
// remembering why.
func (n *Nodes[C]) Blacklist(host string, why C, until time.Time) {
	if !n.hosts[host] {
		n.stale = true
	}
	n.hosts[host] = true
	if !until.IsZero() {
		n.until[host] = until
	}
	n.by[host] = why
}

// Blacklisted says whether host is on the blacklist.
func (n *Nodes[C]) Blacklisted(host string) bool { return n.hosts[host] }

// Len is how many hosts are blacklisted.
func (n *Nodes[C]) Len() int { return len(n.hosts) }

// Hosts returns the blacklisted hosts, sorted.
func (n *Nodes[C]) Hosts() []string { return sortedKeys(n.hosts) }

// Causes returns why each host was blacklisted (expired ones too, until
// blacklisted again), in no order.
func (n *Nodes[C]) Causes() []C {
	out := make([]C, 0, len(n.by))
	for _, c := range n.by {
		out = append(out, c)
	}
	return out
}

// Expire takes the hosts whose blacklisting expired by now off the
// blacklist, queues their removal for the RM (those it was told of), and
// returns them.
func (n *Nodes[C]) Expire(now time.Time) []string {
	var out []string
	for host, until := range n.until {
		if !now.Before(until) {
			delete(n.until, host)
			delete(n.hosts, host)
			if n.sent[host] {
				n.remove = append(n.remove, host)
			}
			delete(n.sent, host)
			out = append(out, host)
		}
	}
	slices.Sort(out)
	return out
}

// Changes are the blacklist changes the RM is still to be told: the hosts
// to add and those to remove.
func (n *Nodes[C]) Changes() (add, remove []string) {
	for _, host := range sortedKeys(n.hosts) {
		if !n.sent[host] {
			add = append(add, host)
		}
	}
	return add, append(remove, n.remove...)
}

// Delivered notes that a heartbeat told the RM of add and remove (as
// Changes returned them).
func (n *Nodes[C]) Delivered(add, remove []string) {
	n.remove = n.remove[len(remove):]
	for _, h := range add {
		n.sent[h] = true
	}
}

// Registered notes a (re-)registration: the RM has forgotten the blacklist.
func (n *Nodes[C]) Registered() { n.sent = map[string]bool{} }

// AllBlacklisted says whether, without a node list, the blacklist covers
// every node the RM counts.
func (n *Nodes[C]) AllBlacklisted() bool {
	return n.list == nil && n.cluster > 0 && len(n.hosts) >= n.cluster
}

// HostsFor are the distinct hosts that can run an ask with node label
// label, sorted: those of the usable nodes within the label (any node for
// the default partition: a non-exclusive label serves it too). nil while
// the node list is not known.
func (n *Nodes[C]) HostsFor(label string) []string {
	if n.list == nil {
		return nil
	}
	seen := map[string]struct{}{}
	for _, nr := range n.list {
		if !Usable(nr.State) || (label != "" && !slices.Contains(nr.Labels, label)) {
			continue
		}
		seen[yarn.Container{NodeID: nr.ID}.Host()] = struct{}{}
	}
	return sortedKeys(seen)
}

// AllOff says whether hosts is not empty and every one is blacklisted.
func (n *Nodes[C]) AllOff(hosts []string) bool {
	return len(hosts) > 0 && !slices.ContainsFunc(hosts, func(h string) bool { return !n.hosts[h] })
}

// Locality are the hosts and racks an ask names besides ANY
// (yarn.Ask.Hosts): every usable host of the node list that is not
// blacklisted, and their racks; none without a node list, for an ask with
// a node label or a per-node bound (a SchedulingRequest: pass labelled
// true), or beyond MaxLocalityHosts. Naming every host with the whole
// count leaves the placement to the RM as an ANY ask does, but lets it
// grant node-local, many containers per node heartbeat, where ANY grants
// are off-switch, one per node heartbeat under the CapacityScheduler's
// defaults.
func (n *Nodes[C]) Locality(labelled bool) (hosts, racks []string) {
	if n.list == nil || labelled {
		return nil, nil
	}
	rackSet := map[string]struct{}{}
	hostSet := map[string]struct{}{}
	for _, nr := range n.list {
		host := yarn.Container{NodeID: nr.ID}.Host()
		if !Usable(nr.State) || n.hosts[host] {
			continue
		}
		hostSet[host] = struct{}{}
		rackSet[cmp.Or(nr.Rack, yarn.DefaultRack)] = struct{}{}
	}
	if len(hostSet) == 0 || len(hostSet) > MaxLocalityHosts {
		return nil, nil
	}
	return sortedKeys(hostSet), sortedKeys(rackSet)
}

// LastHost says whether blacklisting host leaves an ask with node label
// label no host to run on.
func (n *Nodes[C]) LastHost(label, host string) bool {
	if n.hosts[host] {
		return false
	}
	if n.list == nil {
		return n.cluster > 0 && len(n.hosts)+1 >= n.cluster
	}
	hosts := n.HostsFor(label)
	return slices.Contains(hosts, host) && !slices.ContainsFunc(hosts, func(h string) bool { return h != host && !n.hosts[h] })
}

// Text is the blacklist for a diagnostic: each host, sorted, with why.
func (n *Nodes[C]) Text() string {
	hosts := sortedKeys(n.hosts)
	for i, h := range hosts {
		if c, ok := n.by[h]; ok {
			hosts[i] = h + " (" + c.BlacklistWhy() + ")"
		}
	}
	return strings.Join(hosts, "; ")
}

// TailLines is how many stderr lines of a node's last launcher failure
// Why quotes.
const TailLines = 3

// Why is why a host was blacklisted: the container's exit (as text) and
// the last TailLines of its stderr, or else YARN's diagnostics.
func Why(container, exit string, tail []string, diag string) string {
	why := "container " + container + " exited with " + exit
	if len(tail) > TailLines {
		tail = tail[len(tail)-TailLines:]
	}
	if len(tail) > 0 {
		why += ": " + strings.Join(tail, " | ")
	} else if d := strings.TrimSpace(diag); d != "" {
		why += ": " + d
	}
	return why
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
