package yarn

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/internal/ipc"
	"github.com/xres/xres/yarn/internal/logutil"
	"github.com/xres/xres/yarn/internal/sasl"
	"github.com/xres/xres/yarn/security"
)

// AMConfig configures an AMRMClient.
type AMConfig struct {
	// Addrs are the RM scheduler addresses (yarn.resourcemanager.scheduler.address,
	// one per rm-id under HA).
	Addrs []string
	// Token is the AMRMToken, from the container's token file
	// (security.ReadTokenFile(os.Getenv("HADOOP_TOKEN_FILE_LOCATION")).Select(security.KindAMRMToken, "")).
	Token *security.Token
	// Log, Dial, Backoff, PingInterval, IdleTimeout: as in ClientConfig.
	Log          logrus.FieldLogger
	Dial         DialFunc
	Backoff      Backoff
	PingInterval time.Duration
	IdleTimeout  time.Duration
}

// AMRMClient is an ApplicationMasterProtocol client. It authenticates with
// the AMRMToken over SASL DIGEST-MD5 (the RM requires this even on an
// insecure cluster), keeps the allocate response id, and swaps in the new
// AMRMToken when the RM rolls its key. Safe for concurrent use, though an
// AM normally calls Allocate from one loop.
type AMRMClient struct {
	ep  *endpoints
	log logrus.FieldLogger

	mu             sync.Mutex
	token          *security.Token
	lastResponseID int32
}

// NewAMRMClient returns a client; it connects on the first call.
func NewAMRMClient(cfg AMConfig) (*AMRMClient, error) {
	if cfg.Token == nil || cfg.Token.Kind != security.KindAMRMToken {
		return nil, fmt.Errorf("yarn am client: %w: want a %s token, got %v", ErrNoToken, security.KindAMRMToken, cfg.Token)
	}
	c := &AMRMClient{token: cfg.Token, log: logutil.OrDiscard(cfg.Log)}
	mech := func() (sasl.Mechanism, error) {
		t := c.Token()
		u, p := sasl.TokenCredentials(t.Identifier, t.Password)
		return &sasl.DigestMD5{Username: u, Password: p}, nil
	}
	ep, err := newEndpoints(cfg.Addrs, func(addr string) ipc.Config {
		return ipc.Config{Addr: addr, Protocol: ProtocolApplicationMaster, Mechanism: mech,
			Dial: ipc.DialFunc(cfg.Dial), PingInterval: cfg.PingInterval, Log: c.log}
	}, cfg.IdleTimeout, cfg.Backoff, c.log, ErrNoActiveRM)
	if err != nil {
		return nil, fmt.Errorf("yarn am client: %w", err)
	}
	c.ep = ep
	return c, nil
}

// Token returns the current AMRMToken.
func (c *AMRMClient) Token() *security.Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// Close closes the connections.
func (c *AMRMClient) Close() error { return c.ep.close() }

// Register registers the AM. After ErrApplicationMasterNotRegistered (RM
// restart or failover) call it again and resend every outstanding ask.
func (c *AMRMClient) Register(ctx context.Context, req RegisterRequest) (RegisterResponse, error) {
	resp := &hadoopyarn.RegisterApplicationMasterResponseProto{}
	if err := c.ep.call(ctx, "registerApplicationMaster", &hadoopyarn.RegisterApplicationMasterRequestProto{
		Host: proto.String(req.Host), RpcPort: proto.Int32(req.RPCPort), TrackingUrl: proto.String(req.TrackingURL),
	}, resp); err != nil {
		return RegisterResponse{}, err
	}
	c.mu.Lock()
	c.lastResponseID = 0
	c.mu.Unlock()
	return registerResponse(resp), nil
}

// Allocate sends one heartbeat. The client fills in response_id (the last
// one received; 0 after Register). When the response carries a new
// AMRMToken it becomes the token for every later connection (and is in
// the answer's AMRMToken). An RM that cannot handle placement constraints
// answers a SchedulingRequest with an error wrapping
// ErrPlacementUnsupported.
func (c *AMRMClient) Allocate(ctx context.Context, r AllocateRequest) (AllocateResponse, error) {
	req, err := allocateProto(r)
	if err != nil {
		return AllocateResponse{}, err
	}
	c.mu.Lock()
	req.ResponseId = proto.Int32(c.lastResponseID)
	c.mu.Unlock()
	resp := newAllocateAnswer()
	if err := c.ep.call(ctx, "allocate", req, resp); err != nil {
		return AllocateResponse{}, placementRefused(err)
	}
	c.mu.Lock()
	c.lastResponseID = resp.GetResponseId()
	rolled := resp.GetAmRmToken() != nil
	if rolled {
		nt := security.FromProto(resp.GetAmRmToken())
		nt.Service = c.token.Service // the RM leaves it empty; keep ours (all scheduler addresses)
		c.token = nt
		c.log.WithField("token", nt.String()).Info("resourcemanager rolled the AMRMToken; using the new one")
	}
	c.mu.Unlock()
	if rolled {
		// The RM judges the token by the connection's authentication: until
		// the AM connects again with the new one it resends it on every
		// heartbeat, and the old one stops working once its key expires.
		for _, cl := range c.ep.clients {
			cl.Reset()
		}
	}
	return resp.response(), nil
}

// Finish unregisters the AM with a final status, repeating the call until
// the RM confirms (as Hadoop's AMRMClient does) or ctx ends.
func (c *AMRMClient) Finish(ctx context.Context, r FinishRequest) error {
	req := finishProto(r)
	for {
		resp := &hadoopyarn.FinishApplicationMasterResponseProto{}
		if err := c.ep.call(ctx, "finishApplicationMaster", req, resp); err != nil {
			return err
		}
		if resp.GetIsUnregistered() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("finish application master: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
