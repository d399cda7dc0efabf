package amnm

import (
	"context"
	"fmt"

	"github.com/xres/xres/resources/contract"

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

// EachStarter is a BatchStarter that gives each container of a batch its
// own credentials (tokens[i] for cs[i]). *yarn.NMClient is one.
type EachStarter interface {
	StartContainersEach(ctx context.Context, cs []yarn.Container, nmToken security.Token, launch yarn.LaunchContext, tokens [][]byte) []error
}

var _ EachStarter = (*yarn.NMClient)(nil)

// WithContainerKeys wraps nm so that every container it starts gets a key
// of its own in its credentials: contract.ContainerKey(secret, its id) as
// the secret key contract.ContainerKeyAlias, and never the application's
// secret (contract.ReportSecretAlias is taken out), so that a container's
// key signs for that container alone. Apply WithTokens over it (it works
// on the credentials WithTokens puts in). It is a
// BatchStarter when nm is one (one call per batch when nm is an
// EachStarter, else one per container). Credentials that do not parse
// fail the start: a worker must not run with the application's secret.
func WithContainerKeys(nm NMClient, secret []byte) NMClient {
	k := keyNM{NMClient: nm, secret: secret}
	if _, ok := nm.(BatchStarter); ok {
		return keyBatchNM{keyNM: k}
	}
	return k
}

type keyNM struct {
	NMClient
	secret []byte
}

// credentials returns base (the launch context's credentials) for each of
// cs with that container's key.
func (n keyNM) credentials(base []byte, cs []yarn.Container) ([][]byte, error) {
	var creds *security.Credentials
	if len(base) == 0 {
		creds = &security.Credentials{}
	} else {
		var err error
		if creds, err = security.ParseCredentials(base); err != nil {
			return nil, fmt.Errorf("give the worker its own report key: %w", err)
		}
	}
	creds.RemoveSecret(contract.ReportSecretAlias)
	out := make([][]byte, len(cs))
	for i, c := range cs {
		creds.AddSecret(contract.ContainerKeyAlias, contract.ContainerKey(n.secret, c.ID))
		b, err := creds.Marshal(security.FormatWritable)
		if err != nil {
			return nil, fmt.Errorf("give the worker its own report key: %w", err)
		}
		out[i] = b
	}
	return out, nil
}

func (n keyNM) StartContainer(ctx context.Context, c yarn.Container, nmToken security.Token, launch yarn.LaunchContext) error {
	t, err := n.credentials(launch.Tokens, []yarn.Container{c})
	if err != nil {
		return err
	}
	launch.Tokens = t[0]
	return n.NMClient.StartContainer(ctx, c, nmToken, launch)
}

type keyBatchNM struct{ keyNM }

func (n keyBatchNM) StartContainers(ctx context.Context, cs []yarn.Container, nmToken security.Token, launch yarn.LaunchContext) []error {
	errs := make([]error, len(cs))
	t, err := n.credentials(launch.Tokens, cs)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if e, ok := n.NMClient.(EachStarter); ok {
		return e.StartContainersEach(ctx, cs, nmToken, launch, t)
	}
	b := n.NMClient.(BatchStarter)
	for i, c := range cs {
		l := launch
		l.Tokens = t[i]
		errs[i] = b.StartContainers(ctx, []yarn.Container{c}, nmToken, l)[0]
	}
	return errs
}

var _ BatchStarter = keyBatchNM{}
