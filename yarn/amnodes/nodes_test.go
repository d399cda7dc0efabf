package amnodes

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xres/xres/yarn"
)

type why string

func (w why) BlacklistWhy() string { return string(w) }

// A blacklisted host is told to the RM once, comes off after its expiry
// (its removal told once, and only because the RM knew it), and the
// diagnostic names each host with why.
func TestBlacklistChangesAndExpiry(t *testing.T) {
	n := New[why]()
	t0 := time.Unix(1000, 0)
	n.Blacklist("h2", "disk", t0.Add(time.Minute))
	n.Blacklist("h1", "gpu", time.Time{}) // for ever
	add, remove := n.Changes()
	require.Equal(t, []string{"h1", "h2"}, add)
	require.Empty(t, remove)
	n.Delivered(add, remove)
	add, remove = n.Changes()
	require.Empty(t, add, "told once")
	require.Empty(t, remove)
	require.Equal(t, "h1 (gpu); h2 (disk)", n.Text())

	require.Empty(t, n.Expire(t0.Add(time.Second)))
	require.Equal(t, []string{"h2"}, n.Expire(t0.Add(time.Minute)))
	require.False(t, n.Blacklisted("h2"))
	require.True(t, n.Blacklisted("h1"), "no expiry: blacklisted for ever")
	add, remove = n.Changes()
	require.Empty(t, add)
	require.Equal(t, []string{"h2"}, remove)
	n.Delivered(add, remove)
	_, remove = n.Changes()
	require.Empty(t, remove, "removal told once")

	// Expired before the RM heard of it: nothing to remove.
	n.Blacklist("h3", "x", t0.Add(time.Hour))
	require.Equal(t, []string{"h3"}, n.Expire(t0.Add(time.Hour)))
	add, remove = n.Changes()
	require.Empty(t, add)
	require.Empty(t, remove)

	// A re-registration: the RM forgot the blacklist, it is sent again.
	n.Registered()
	add, _ = n.Changes()
	require.Equal(t, []string{"h1"}, add)
}

// The node list decides which hosts can run an ask and which it names;
// without it, the blacklist is compared with the RM's node count.
func TestHostsLocalityAndLastHost(t *testing.T) {
	n := New[why]()
	require.Empty(t, n.Heartbeat(3, nil))
	require.True(t, n.ToRead(), "read at first")
	require.False(t, n.ToRead(), "not again while nothing is blacklisted")
	n.Blacklist("a", "x", time.Time{})
	n.Blacklist("b", "x", time.Time{})
	require.True(t, n.LastHost("", "c"), "without a list: the last of the 3 nodes counted")
	require.False(t, n.AllBlacklisted())
	n.Blacklist("c", "x", time.Time{})
	require.True(t, n.AllBlacklisted())

	n = New[why]()
	n.SetList([]yarn.NodeReport{
		{ID: "a:1", State: "RUNNING", Rack: "/r1", Labels: []string{"gpu"}},
		{ID: "a:2", State: "RUNNING", Rack: "/r1"},
		{ID: "b:1", State: "DECOMMISSIONING"},
		{ID: "c:1", State: "UNHEALTHY"},
		{ID: "d:1", State: "LOST"},
	})
	require.Equal(t, []string{"a", "c"}, n.HostsFor(""), "distinct hosts, usable nodes only")
	require.Equal(t, []string{"a"}, n.HostsFor("gpu"))
	hosts, racks := n.Locality(false)
	require.Equal(t, []string{"a", "c"}, hosts)
	require.Equal(t, []string{yarn.DefaultRack, "/r1"}, racks)
	hosts, racks = n.Locality(true)
	require.Nil(t, hosts, "a labelled ask names no host")
	require.Nil(t, racks)
	require.True(t, n.LastHost("gpu", "a"))
	require.False(t, n.LastHost("", "a"))
	n.Blacklist("c", "x", time.Time{})
	hosts, _ = n.Locality(false)
	require.Equal(t, []string{"a"}, hosts, "a blacklisted host is not named")
	require.True(t, n.LastHost("", "a"))
	require.False(t, n.AllOff(n.HostsFor("")))
	n.Blacklist("a", "x", time.Time{})
	require.True(t, n.AllOff(n.HostsFor("")))
	require.False(t, n.AllOff(nil), "no host is not all blacklisted")
}

// A heartbeat's gone nodes (LOST, DECOMMISSIONED, SHUTDOWN) are returned;
// a changed cluster makes the list stale while hosts are blacklisted.
func TestHeartbeat(t *testing.T) {
	n := New[why]()
	gone := n.Heartbeat(2, []yarn.NodeUpdate{{NodeID: "a:1", State: "LOST"}, {NodeID: "b:1", State: "UNHEALTHY"},
		{NodeID: "c:1", State: "DECOMMISSIONING"}, {NodeID: "d:1", State: "SHUTDOWN"}})
	require.Equal(t, map[string]string{"a:1": "LOST", "d:1": "SHUTDOWN"}, gone)
	require.Equal(t, 2, n.Cluster())
	require.True(t, n.ToRead())
	n.Blacklist("a", "x", time.Time{})
	require.True(t, n.ToRead(), "the blacklist changed")
	require.False(t, n.ToRead())
	n.Heartbeat(0, nil)
	require.False(t, n.ToRead(), "no count sent: nothing changed")
	n.Heartbeat(3, nil)
	require.True(t, n.ToRead(), "the cluster grew")
	require.Equal(t, "container c1 exited with 3: l2 | l3 | l4", Why("c1", "3", []string{"l1", "l2", "l3", "l4"}, "diag"))
	require.Equal(t, "container c1 exited with 3: diag", Why("c1", "3", nil, " diag "))
}
