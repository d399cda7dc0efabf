package security

import (
	"fmt"
	"time"

	"github.com/xres/xres/hadoopproto/tokenfile"
)

// DelegationIdentifier is the identifier of a Hadoop delegation token
// (HDFS_DELEGATION_TOKEN, RM_DELEGATION_TOKEN: Hadoop's
// AbstractDelegationTokenIdentifier). It holds no secret.
type DelegationIdentifier struct {
	Owner, Renewer, RealUser string
	IssueDate, MaxDate       time.Time // MaxDate: the token's max lifetime ends
	SequenceNumber           int32
	MasterKeyID              int32
}

// Delegation token identifier (Writable):
//
//	+---------+------------+--------------+---------------+
//	| version | Text owner | Text renewer | Text realUser |
//	+---------+------------+--------------+---------------+
//	| VLong issueDate (ms) | VLong maxDate (ms) | VInt sequenceNumber | VInt masterKeyId |
//	+----------------------+--------------------+---------------------+------------------+
//	version is the byte 0; Text and VLong as in the token storage file.

// delegationVersion is the only identifier version Hadoop writes.
const delegationVersion = 0

// ParseDelegationIdentifier reads a delegation token's identifier bytes.
func ParseDelegationIdentifier(b []byte) (DelegationIdentifier, error) {
	var id DelegationIdentifier
	if len(b) == 0 || b[0] != delegationVersion {
		return id, fmt.Errorf("%w: delegation token identifier: unknown version", ErrTokenFile)
	}
	d := &tokenfile.Reader{B: b, Off: 1}
	var err error
	fail := func(what string, err error) (DelegationIdentifier, error) {
		return DelegationIdentifier{}, fmt.Errorf("%w: delegation token identifier %s at byte %d: %v", ErrTokenFile, what, d.Off, err)
	}
	if id.Owner, err = d.Text(); err != nil {
		return fail("owner", err)
	}
	if id.Renewer, err = d.Text(); err != nil {
		return fail("renewer", err)
	}
	if id.RealUser, err = d.Text(); err != nil {
		return fail("real user", err)
	}
	issue, err := d.VLong()
	if err != nil {
		return fail("issue date", err)
	}
	maxDate, err := d.VLong()
	if err != nil {
		return fail("max date", err)
	}
	seq, err := d.VLong()
	if err != nil {
		return fail("sequence number", err)
	}
	key, err := d.VLong()
	if err != nil {
		return fail("master key id", err)
	}
	id.IssueDate, id.MaxDate = time.UnixMilli(issue), time.UnixMilli(maxDate)
	id.SequenceNumber, id.MasterKeyID = int32(seq), int32(key)
	return id, nil
}

// Marshal writes the identifier as Hadoop does (ParseDelegationIdentifier
// reads it back).
func (id DelegationIdentifier) Marshal() []byte {
	out := []byte{delegationVersion}
	out = writeText(out, id.Owner)
	out = writeText(out, id.Renewer)
	out = writeText(out, id.RealUser)
	out = writeVLong(out, id.IssueDate.UnixMilli())
	out = writeVLong(out, id.MaxDate.UnixMilli())
	out = writeVLong(out, int64(id.SequenceNumber))
	return writeVLong(out, int64(id.MasterKeyID))
}
