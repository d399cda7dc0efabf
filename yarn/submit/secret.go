package submit

import (
	"crypto/rand"
	"fmt"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn/security"
)

// NewReportSecret returns a fresh application report secret:
// contract.ReportSecretBytes random bytes.
func NewReportSecret() ([]byte, error) {
	b := make([]byte, contract.ReportSecretBytes)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("make the application's report secret: %w", err)
	}
	return b, nil
}

// WithReportSecret returns the AM's credentials tokens (token storage
// format; nil: none yet) with a fresh report secret added as the secret key
// contract.ReportSecretAlias, one already there kept. The RM hands them to
// every AM attempt, and the AM passes them on to its workers: the launchers
// sign their device reports with it (see contract.SignReport), so a
// restarted AM and the containers an earlier attempt started share it.
func WithReportSecret(tokens []byte) ([]byte, error) {
	creds := &security.Credentials{}
	if len(tokens) > 0 {
		var err error
		if creds, err = security.ParseCredentials(tokens); err != nil {
			return nil, fmt.Errorf("add the report secret to the AM's credentials: %w", err)
		}
	}
	if len(creds.Secret(contract.ReportSecretAlias)) == 0 {
		secret, err := NewReportSecret()
		if err != nil {
			return nil, err
		}
		creds.AddSecret(contract.ReportSecretAlias, secret)
	}
	b, err := creds.Marshal(security.FormatWritable)
	if err != nil {
		return nil, fmt.Errorf("add the report secret to the AM's credentials: %w", err)
	}
	return b, nil
}
