package security

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDelegationIdentifierRoundTrip(t *testing.T) {
	id := DelegationIdentifier{Owner: "client@EXAMPLE.COM", Renewer: "hadoop", IssueDate: time.UnixMilli(1764780000123),
		MaxDate: time.UnixMilli(1764780090123), SequenceNumber: 7, MasterKeyID: 2}
	got, err := ParseDelegationIdentifier(id.Marshal())
	require.NoError(t, err)
	require.Equal(t, id.Owner, got.Owner)
	require.Equal(t, id.Renewer, got.Renewer)
	require.Equal(t, "", got.RealUser)
	require.True(t, id.IssueDate.Equal(got.IssueDate))
	require.True(t, id.MaxDate.Equal(got.MaxDate))
	require.Equal(t, int32(7), got.SequenceNumber)
	require.Equal(t, int32(2), got.MasterKeyID)
}

func TestDelegationIdentifierBad(t *testing.T) {
	for _, b := range [][]byte{nil, {1}, {0}, {0, 5, 'a'}} {
		_, err := ParseDelegationIdentifier(b)
		require.ErrorIs(t, err, ErrTokenFile, "%x", b)
	}
}

func FuzzParseDelegationIdentifier(f *testing.F) {
	f.Add(DelegationIdentifier{Owner: "a", Renewer: "b", IssueDate: time.UnixMilli(1), MaxDate: time.UnixMilli(2)}.Marshal())
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := ParseDelegationIdentifier(b)
		if err != nil {
			return
		}
		again, err := ParseDelegationIdentifier(id.Marshal())
		require.NoError(t, err)
		require.Equal(t, id.Owner, again.Owner)
	})
}
