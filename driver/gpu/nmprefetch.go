package gpu

import (
	"context"
	"net"
	"sync"
	"time"
)

// The NodeManager request a YARN container's GPU driver sends is known
// from the container's environment alone (CONTAINER_ID, NM_HOST,
// NM_HTTP_PORT, USER) for the common case, yarn.io/gpu over plain HTTP.
// The launcher's command sends it as it starts (PrefetchNodeManager), so
// that the NodeManager answers while the launcher reads its configuration
// and makes its drivers; the driver then takes it instead of sending its
// own. YARN assigns a container's GPUs once, as it starts the container,
// before the launcher runs: an answer asked a moment earlier is the same.

// prefetchTimeout bounds the prefetched request until a driver takes it
// (then the driver's own timeout does).
var prefetchTimeout = 10 * time.Second

// prefetched is the request PrefetchNodeManager sent, until a driver asking
// the same takes it.
var prefetched struct {
	sync.Mutex
	key   string        // what it asks (nmClient.key)
	sent  chan struct{} // closed once call is sent
	call  *plainCall
	taken bool
}

// PrefetchNodeManager sends the GET for yarn.io/gpu that the GPU driver of
// this YARN container will send (to an address, connected and written at
// once: a few tens of microseconds to the node's own NodeManager; a host
// name is resolved and connected to in a goroutine, so that a slow
// resolver never holds a launch that may not ask at all), unless
// the process is not in a YARN container or $HADOOP_CONF_DIR's
// yarn-site.xml may ask for HTTPS (then the driver asks through its helper
// as ever). The first driver whose request is the same takes it; an answer
// nobody takes (the resource is nvidia.com/gpu, the assignment is off, no
// GPU is configured) is left unread, the connection closed with the
// process. Only the first call sends anything.
func PrefetchNodeManager(getenv func(string) string) {
	host, port, container := getenv(EnvNMHost), getenv(EnvNMHTTPPort), getenv(EnvContainerID)
	if host == "" || port == "" || container == "" {
		return
	}
	if readSiteConf(getenv).httpsOnly() {
		return
	}
	c := &nmClient{host: host, port: port, user: getenv("USER"), timeout: prefetchTimeout, getenv: getenv}
	prefetched.Lock()
	if prefetched.sent != nil {
		prefetched.Unlock()
		return
	}
	sent := make(chan struct{})
	prefetched.key, prefetched.sent = c.key(YarnGPU), sent
	prefetched.Unlock()
	send := func() {
		call := c.sendOn(context.Background(), YarnGPU, "")
		prefetched.Lock()
		prefetched.call = call
		prefetched.Unlock()
		close(sent)
	}
	if net.ParseIP(host) != nil {
		send()
	} else {
		go send()
	}
}

// key names what a GET for resource asks: the same NodeManager, user and
// resource.
func (c *nmClient) key(resource string) string {
	return c.host + "\x00" + c.port + "\x00" + c.user + "\x00" + resource
}

// takePrefetched returns the prefetched request if it asks what c would
// for resource and no one took it yet, bound to ctx and c's timeout as
// c's own request would be; nil otherwise, and where its sending failed
// (the driver's own request, with its own timeout, decides then).
func (c *nmClient) takePrefetched(ctx context.Context, resource string) *plainCall {
	prefetched.Lock()
	sent := prefetched.sent
	mine := sent != nil && !prefetched.taken && prefetched.key == c.key(resource)
	if mine {
		prefetched.taken = true
	}
	prefetched.Unlock()
	if !mine {
		return nil
	}
	select {
	case <-sent:
	case <-ctx.Done():
		return nil
	}
	prefetched.Lock()
	p := prefetched.call
	prefetched.Unlock()
	if p.err != nil {
		p.cancel()
		return nil
	}
	timeout := c.limit()
	bctx, cancel := context.WithTimeout(ctx, timeout)
	stop := context.AfterFunc(bctx, p.cancel) // ends a read still waiting
	closeConn := p.cancel
	p.ctx, p.cancel = bctx, func() { stop(); closeConn(); cancel() }
	return p
}
