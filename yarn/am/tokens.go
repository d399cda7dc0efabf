package am

import (
	"context"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/security"
)

// WithTokens wraps nm so that every container it starts carries tokens()
// as its credentials (the newest HDFS delegation tokens an AM with a keytab
// obtained, hdfstoken.Renewer.Tokens), whatever its group's launch context
// was built with. It is a BatchStarter when nm is one.
func WithTokens(nm NMClient, tokens func() []byte) NMClient {
	t := tokenNM{NMClient: nm, tokens: tokens}
	if b, ok := nm.(BatchStarter); ok {
		return tokenBatchNM{tokenNM: t, batch: b}
	}
	return t
}

type tokenNM struct {
	NMClient
	tokens func() []byte
}

func (n tokenNM) StartContainer(ctx context.Context, c yarn.Container, nmToken security.Token, launch yarn.LaunchContext) error {
	launch.Tokens = n.tokens()
	return n.NMClient.StartContainer(ctx, c, nmToken, launch)
}

type tokenBatchNM struct {
	tokenNM
	batch BatchStarter
}

func (n tokenBatchNM) StartContainers(ctx context.Context, cs []yarn.Container, nmToken security.Token, launch yarn.LaunchContext) []error {
	launch.Tokens = n.tokens()
	return n.batch.StartContainers(ctx, cs, nmToken, launch)
}

var (
	_ NMClient     = tokenNM{}
	_ BatchStarter = tokenBatchNM{}
)
