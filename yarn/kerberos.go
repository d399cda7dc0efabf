package yarn

import (
	"errors"

	"github.com/xres/xres/yarn/internal/sasl"
)

// Kerberos configures KERBEROS (GSSAPI) authentication to the
// ResourceManager of a secure cluster.
type Kerberos struct {
	// Principal is the client principal, user@REALM.
	Principal string
}

func (k *Kerberos) principal() string { return k.Principal }

func (k *Kerberos) mechanism() (sasl.Mechanism, error) {
	return nil, errors.New("kerberos: not implemented yet")
}
