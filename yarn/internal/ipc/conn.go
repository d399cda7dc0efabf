package ipc

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
	"github.com/xres/xres/yarn/internal/sasl"
)

// DialFunc opens the TCP connection; net.Dialer.DialContext fits.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Config says where to connect and how to authenticate.
type Config struct {
	// Addr is host:port of the server.
	Addr string
	// Protocol is the Java protocol class, e.g.
	// org.apache.hadoop.yarn.api.ApplicationClientProtocolPB.
	Protocol string
	// User is the effective user sent with SIMPLE authentication (and
	// KERBEROS). Ignored with TOKEN: the token names the user.
	User string
	// Mechanism, when set, returns the SASL mechanism for a new connection
	// (called once per dial, so a rolled token is picked up). nil means
	// SIMPLE: no SASL at all.
	Mechanism func() (sasl.Mechanism, error)
	// Dial opens the connection; nil uses a net.Dialer.
	Dial DialFunc
	// PingInterval is how long a call may wait without any bytes from the
	// server before the client sends a ping (ipc.ping.interval, 60 s).
	PingInterval time.Duration
	// ConnectTimeout bounds dialing plus the SASL handshake when the
	// caller's context allows longer (ipc.client.connect.timeout, 20 s).
	ConnectTimeout time.Duration
	// Log receives debug records; nil discards them.
	Log logrus.FieldLogger
}

// Conn is one authenticated IPC connection. Calls from many goroutines are
// multiplexed on it and matched to responses by call id. A call whose
// context ends returns at once and its late response is dropped; the
// connection stays usable. A network error or a FATAL response breaks the
// connection: every pending call fails and Err reports why.
type Conn struct {
	cfg      Config
	nc       net.Conn
	br       *bufio.Reader
	clientID []byte
	log      logrus.FieldLogger
	layer    sasl.Layer // SASL security layer, nil for authentication only
	methods  sync.Map   // method name → marshalled RequestHeaderProto

	// The write side (see send): one caller at a time writes, the others
	// queue their packets behind it.
	wmu       sync.Mutex
	queue     []byte // packets waiting for the write in progress
	spare     []byte // a drained batch's buffer, reused as the next queue
	flushing  bool   // a caller is writing
	wdeadline time.Time
	wrapBuf   []byte        // WRAP packets of one batch (writer only)
	afterDone chan struct{} // the write-cancel callback has finished

	mu       sync.Mutex
	calls    map[int32]chan *response
	nextID   int32
	err      error // set once when the connection breaks
	broken   atomic.Bool
	active   atomic.Int32 // calls between send and their answer (or error)
	lastRead atomic.Int64 // unix nanoseconds of the last packet read

	done chan struct{}
}

// maxKeptBuffer bounds the write buffers a connection keeps for reuse, so
// one large request does not pin its memory.
const maxKeptBuffer = 64 << 10

// packetBufs holds call packet buffers between calls.
var packetBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// replies holds answered calls' channels for reuse.
var replies = sync.Pool{New: func() any { return make(chan *response, 1) }}

// Dial connects to cfg.Addr, authenticates and sends the connection
// context. ctx bounds the whole set-up.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.Protocol == "" {
		return nil, errors.New("ipc dial: no protocol name")
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 60 * time.Second
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	log := cfg.Log
	if log == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		log = l
	}
	log = log.WithFields(logrus.Fields{"addr": cfg.Addr, "protocol": cfg.Protocol})
	dial := cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(ctx, "tcp", cfg.Addr)
	if err != nil {
		return nil, &NetError{Op: "dial", Addr: cfg.Addr, Err: err}
	}
	c := &Conn{
		cfg:       cfg,
		nc:        nc,
		br:        bufio.NewReaderSize(nc, 32<<10),
		clientID:  make([]byte, 16),
		log:       log,
		calls:     map[int32]chan *response{},
		done:      make(chan struct{}),
		afterDone: make(chan struct{}, 1),
	}
	if _, err := rand.Read(c.clientID); err != nil {
		nc.Close()
		return nil, fmt.Errorf("ipc dial %s: client id: %w", cfg.Addr, err)
	}
	if err := c.handshake(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	c.lastRead.Store(time.Now().UnixNano())
	go c.readLoop()
	go c.pingLoop()
	log.Debug("ipc connection established")
	return c, nil
}

// handshake runs the preamble, SASL when configured, and the context.
func (c *Conn) handshake(ctx context.Context) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	defer c.nc.SetDeadline(time.Time{})

	wrap := func(err error) error {
		if cerr := ctxErr(ctx, err); cerr != nil {
			return fmt.Errorf("ipc connect %s: %w", c.cfg.Addr, cerr)
		}
		return err
	}
	var mech sasl.Mechanism
	if c.cfg.Mechanism != nil {
		m, err := c.cfg.Mechanism()
		if err != nil {
			return fmt.Errorf("ipc connect %s: %w", c.cfg.Addr, err)
		}
		mech = m
	}
	if _, err := c.nc.Write(preamble(mech != nil)); err != nil {
		return wrap(&NetError{Op: "write", Addr: c.cfg.Addr, Err: err})
	}
	if mech != nil {
		if err := c.saslConnect(mech); err != nil {
			return wrap(err)
		}
		if l, ok := mech.(sasl.Layered); ok && l.Layer() != nil {
			c.layer = l.Layer()
			c.br = bufio.NewReaderSize(&unwrapReader{src: c.br, layer: c.layer}, 32<<10)
			c.log.Debug("sasl security layer in use (hadoop.rpc.protection integrity or privacy)")
		}
	}
	user := &hadoopcommon.UserInformationProto{}
	if mech == nil || mech.Method() == "KERBEROS" {
		user.EffectiveUser = proto.String(c.cfg.User)
	}
	pkt, err := encodePacket(requestHeader(callIDContext, c.clientID, invalidRetryCount),
		&hadoopcommon.IpcConnectionContextProto{UserInfo: user, Protocol: proto.String(c.cfg.Protocol)})
	if err != nil {
		return err
	}
	if _, err := c.writeWire(pkt); err != nil {
		return wrap(&NetError{Op: "write", Addr: c.cfg.Addr, Err: err})
	}
	return nil
}

// Decoder is a response message that decodes its own bytes, where
// proto.Unmarshal would be too slow for it (yarn's allocate answer).
type Decoder interface {
	proto.Message
	DecodeFrom(b []byte) error
}

// decode decodes a call's answer into resp: with its own DecodeFrom when
// it is a Decoder, else proto.Unmarshal.
func decode(b []byte, resp proto.Message) error {
	if d, ok := resp.(Decoder); ok {
		return d.DecodeFrom(b)
	}
	return proto.Unmarshal(b, resp)
}

// Call sends method with req and decodes the answer into resp (see
// Decoder). It returns
// a *RemoteError when the server threw, a *NetError when the connection
// failed, or ctx's error when ctx ended first.
func (c *Conn) Call(ctx context.Context, method string, req, resp proto.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("call %s to %s: %w", method, c.cfg.Addr, err)
	}
	mh, err := c.methodHeader(method)
	if err != nil {
		return fmt.Errorf("call %s: %w", method, err)
	}
	ch := replies.Get().(chan *response)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		replies.Put(ch)
		return err
	}
	id := c.nextID
	c.nextID = (c.nextID + 1) & 0x7fffffff
	c.calls[id] = ch
	c.mu.Unlock()

	c.active.Add(1)
	defer c.active.Add(-1)
	bp := packetBufs.Get().(*[]byte)
	pkt, err := appendCall((*bp)[:0], id, c.clientID, mh, req)
	if err == nil {
		err = c.send(ctx, pkt)
	}
	if cap(pkt) <= maxKeptBuffer {
		*bp = pkt[:0]
		packetBufs.Put(bp)
	}
	if err != nil {
		c.forget(id)
		if cerr := c.Err(); cerr != nil && ctx.Err() == nil {
			err = cerr // the server closed first; its reason beats "broken pipe"
		}
		return fmt.Errorf("call %s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("call %s: %w", method, c.Err())
		}
		replies.Put(ch) // answered and out of the table: nothing else sends on it
		if r.status != hadoopcommon.RpcResponseHeaderProto_SUCCESS {
			return remoteError(method, r.fullHeader())
		}
		if err := decode(r.body, resp); err != nil {
			return fmt.Errorf("call %s: decode %s: %w", method, resp.ProtoReflect().Descriptor().Name(), err)
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		return fmt.Errorf("call %s to %s: %w", method, c.cfg.Addr, ctx.Err())
	}
}

// methodHeader returns the marshalled RequestHeaderProto for method, the
// same for every call of it on this connection.
func (c *Conn) methodHeader(method string) ([]byte, error) {
	if b, ok := c.methods.Load(method); ok {
		return b.([]byte), nil
	}
	b, err := proto.Marshal(&hadoopcommon.RequestHeaderProto{
		MethodName:                 proto.String(method),
		DeclaringClassProtocolName: proto.String(c.cfg.Protocol),
		ClientProtocolVersion:      proto.Uint64(protocolVersion),
	})
	if err != nil {
		return nil, fmt.Errorf("marshal RequestHeaderProto: %w", err)
	}
	c.methods.Store(method, b)
	return b, nil
}

func (c *Conn) forget(id int32) {
	c.mu.Lock()
	delete(c.calls, id)
	c.mu.Unlock()
}

// send puts one whole packet on the wire, batching with other callers
// (group commit): the caller that finds no write in progress writes its
// packet itself at once, and then, until the queue is empty, whatever
// other callers queued meanwhile, all of it in one write. Under load N
// callers thus share a few large writes instead of taking turns at N small
// ones, and a lone caller pays nothing extra.
//
// A packet queued here is written by the caller in progress, under that
// caller's ctx. A write cut short by ctx after bytes went out, or one that
// carried other callers' packets, breaks the connection (the stream is
// lost, or their packets are); every waiting call then fails at once.
func (c *Conn) send(ctx context.Context, pkt []byte) error {
	c.wmu.Lock()
	if c.flushing {
		c.queue = append(c.queue, pkt...)
		c.wmu.Unlock()
		return nil
	}
	c.flushing = true
	c.wmu.Unlock()
	batch, own := pkt, true
	if c.active.Load() > 1 {
		// Other calls are in flight, and their callers are likely
		// runnable right now (woken by the answers just read). Let them
		// run first: they queue their packets behind ours and all go in
		// one write, one syscall for the client and one wake-up of the
		// server's reader instead of one each.
		runtime.Gosched()
		c.wmu.Lock()
		if len(c.queue) > 0 {
			batch, own = append(c.queue, pkt...), false
			c.queue, c.spare = c.spare, nil
		}
		c.wmu.Unlock()
	}
	for {
		n, err := c.writeBatch(ctx, batch)
		c.wmu.Lock()
		if !own && cap(batch) <= maxKeptBuffer {
			c.spare = batch[:0]
		}
		if err != nil {
			lost := n > 0 || !own || len(c.queue) > 0
			c.queue = c.queue[:0]
			c.flushing = false
			c.wmu.Unlock()
			return c.writeFailed(ctx, err, lost)
		}
		if len(c.queue) == 0 {
			c.flushing = false
			c.wmu.Unlock()
			return nil
		}
		batch, own = c.queue, false
		c.queue, c.spare = c.spare, nil
		c.wmu.Unlock()
	}
}

// writeBatch writes b under ctx's deadline and cancellation. Only the
// caller holding the write side (flushing) calls it.
func (c *Conn) writeBatch(ctx context.Context, b []byte) (int, error) {
	dl, _ := ctx.Deadline()
	if !dl.Equal(c.wdeadline) {
		_ = c.nc.SetWriteDeadline(dl)
		c.wdeadline = dl
	}
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() {
			_ = c.nc.SetWriteDeadline(time.Unix(1, 0))
			c.afterDone <- struct{}{}
		})
	}
	n, err := c.writeWire(b)
	if stop != nil && !stop() {
		<-c.afterDone // it ran: wait until it is done before the next write
		c.wdeadline = time.Unix(1, 0)
	}
	return n, err
}

// writeFailed turns a failed write into the caller's error; lost says the
// stream or other callers' packets went with it, which breaks the
// connection.
func (c *Conn) writeFailed(ctx context.Context, err error, lost bool) error {
	nerr := &NetError{Op: "write", Addr: c.cfg.Addr, Err: err}
	if cerr := ctxErr(ctx, err); cerr != nil {
		if lost {
			c.fail(nerr)
		}
		return cerr
	}
	// The peer went away. If it said why first (a FATAL such as "SIMPLE
	// authentication is not enabled"), the reader is about to see it:
	// give it a moment so the caller gets the reason, not "broken pipe".
	select {
	case <-c.done:
	case <-time.After(time.Second):
	}
	c.fail(nerr)
	return c.Err()
}

// ctxErr returns ctx's error when err came from ctx ending: either ctx is
// done, or err is the socket deadline that mirrors ctx's deadline (the
// socket can notice a passed deadline before ctx's own timer fires).
func ctxErr(ctx context.Context, err error) error {
	if e := ctx.Err(); e != nil {
		return e
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			return context.DeadlineExceeded
		}
	}
	return nil
}

// readLoop hands each response to its waiting call until the connection
// breaks.
func (c *Conn) readLoop() {
	for {
		p, err := readPacket(c.br)
		if err != nil {
			var re *RemoteError
			if errors.As(err, &re) {
				c.fail(re)
			} else if errors.Is(err, ErrFrame) {
				c.fail(fmt.Errorf("read from %s: %w", c.cfg.Addr, err))
			} else {
				c.fail(&NetError{Op: "read", Addr: c.cfg.Addr, Err: err})
			}
			return
		}
		r, err := decodeResponse(p)
		if err != nil {
			c.fail(fmt.Errorf("read from %s: %w", c.cfg.Addr, err))
			return
		}
		c.lastRead.Store(time.Now().UnixNano())
		c.mu.Lock()
		ch, ok := c.calls[r.callID]
		delete(c.calls, r.callID)
		c.mu.Unlock()
		if r.status == hadoopcommon.RpcResponseHeaderProto_FATAL {
			rerr := remoteError("connection", r.fullHeader())
			if ok {
				ch <- r
			}
			c.fail(rerr)
			return
		}
		if !ok {
			c.log.WithField("call_id", r.callID).Debug("dropping response to a call that is gone")
			continue
		}
		ch <- r
	}
}

// pingLoop sends a ping when calls are waiting and the server has said
// nothing for a ping interval, as Hadoop's Java client does.
func (c *Conn) pingLoop() {
	t := time.NewTicker(c.cfg.PingInterval / 2)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		c.mu.Lock()
		waiting := len(c.calls) > 0 && time.Since(time.Unix(0, c.lastRead.Load())) >= c.cfg.PingInterval
		c.mu.Unlock()
		if !waiting {
			continue
		}
		pkt, err := encodePacket(requestHeader(callIDPing, c.clientID, invalidRetryCount))
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.PingInterval)
		err = c.send(ctx, pkt)
		cancel()
		if err != nil {
			return
		}
		c.log.Debug("ipc ping sent")
	}
}

// fail breaks the connection with err, once, and wakes every waiting call.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.broken.Store(true)
	calls := c.calls
	c.calls = map[int32]chan *response{}
	c.mu.Unlock()
	close(c.done)
	_ = c.nc.Close()
	for _, ch := range calls {
		close(ch)
	}
	if !errors.Is(err, ErrClosed) {
		c.log.WithError(err).Debug("ipc connection broken")
	}
}

// Err returns why the connection broke, or nil while it is usable.
func (c *Conn) Err() error {
	if !c.broken.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection; pending calls fail with ErrClosed.
func (c *Conn) Close() error {
	c.fail(fmt.Errorf("ipc %s: %w", c.cfg.Addr, ErrClosed))
	return nil
}
