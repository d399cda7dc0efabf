package yarn

import (
	"math/rand"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopcommon"
	"github.com/xres/xres/hadoopproto/hadoopyarn"
)

// viaProto is the answer as proto.Unmarshal and the conversion give it:
// what the hand decoder must give.
func viaProto(b []byte) (AllocateResponse, error) {
	p := &hadoopyarn.AllocateResponseProto{}
	if err := proto.Unmarshal(b, p); err != nil {
		return AllocateResponse{}, err
	}
	return allocateResponse(p), nil
}

// randomContainer is a ContainerProto with each optional field present or
// not, as an RM (or a stranger one) may send it.
func randomContainer(r *rand.Rand) *hadoopyarn.ContainerProto {
	maybe := func() bool { return r.Intn(4) != 0 }
	c := &hadoopyarn.ContainerProto{}
	if maybe() {
		app := &hadoopyarn.ApplicationIdProto{Id: proto.Int32(r.Int31n(100000)), ClusterTimestamp: proto.Int64(r.Int63n(1 << 45))}
		id := &hadoopyarn.ContainerIdProto{Id: proto.Int64(r.Int63n(1<<50) - 5)}
		if maybe() {
			id.AppId = app
		}
		if maybe() {
			att := &hadoopyarn.ApplicationAttemptIdProto{AttemptId: proto.Int32(r.Int31n(20) - 1)}
			if maybe() {
				att.ApplicationId = &hadoopyarn.ApplicationIdProto{Id: proto.Int32(r.Int31n(9)), ClusterTimestamp: proto.Int64(r.Int63())}
			}
			id.AppAttemptId = att
		}
		c.Id = id
	}
	if maybe() {
		c.NodeId = &hadoopyarn.NodeIdProto{Host: proto.String("nm" + strconv.Itoa(r.Intn(50))), Port: proto.Int32(r.Int31n(70000) - 10)}
	}
	if maybe() {
		c.NodeHttpAddress = proto.String("nm:" + strconv.Itoa(r.Intn(9000)))
	}
	if maybe() {
		extra := map[string]int64{}
		for i := range r.Intn(3) {
			extra["yarn.io/dev"+strconv.Itoa(i)] = r.Int63n(9) - 1
		}
		c.Resource = NewResource(r.Int63n(1<<20), r.Int31n(64)-2, extra)
		if maybe() {
			c.Resource.ResourceValueMap = append(c.Resource.ResourceValueMap,
				&hadoopyarn.ResourceInformationProto{Key: proto.String("vcores"), Value: proto.Int64(3)},
				&hadoopyarn.ResourceInformationProto{Key: proto.String("yarn.io/dev0"), Value: proto.Int64(42), Units: proto.String("Gi")})
		}
	}
	if maybe() {
		c.Priority = &hadoopyarn.PriorityProto{Priority: proto.Int32(r.Int31n(5))}
	}
	if maybe() {
		ident := make([]byte, r.Intn(300))
		r.Read(ident)
		c.ContainerToken = &hadoopcommon.TokenProto{Identifier: ident, Password: []byte("0123456789abcdef0123"),
			Kind: proto.String("ContainerToken"), Service: proto.String("nm:45454")}
	}
	if maybe() {
		c.ExecutionType = hadoopyarn.ExecutionTypeProto_OPPORTUNISTIC.Enum()
	}
	if maybe() {
		c.AllocationRequestId = proto.Int64(r.Int63n(10) - 2)
	}
	if maybe() {
		c.Version = proto.Int32(r.Int31n(3))
	}
	return c
}

// randomAnswer is an allocate answer with n containers and the other
// fields the AM reads, marshalled; some containers are sent as two
// encodings of their parts one after the other (which proto merges).
func randomAnswer(t testing.TB, r *rand.Rand, n int) []byte {
	t.Helper()
	resp := &hadoopyarn.AllocateResponseProto{ResponseId: proto.Int32(r.Int31()), NumClusterNodes: proto.Int32(r.Int31n(100))}
	for range r.Intn(5) {
		resp.CompletedContainerStatuses = append(resp.CompletedContainerStatuses, &hadoopyarn.ContainerStatusProto{
			ContainerId: randomContainer(r).GetId(), State: hadoopyarn.ContainerStateProto_C_COMPLETE.Enum(),
			ExitStatus: proto.Int32(r.Int31n(300) - 150), Diagnostics: proto.String("exit " + strconv.Itoa(r.Intn(9)))})
	}
	for range r.Intn(3) {
		resp.NmTokens = append(resp.NmTokens, &hadoopyarn.NMTokenProto{NodeId: &hadoopyarn.NodeIdProto{Host: proto.String("nm1"), Port: proto.Int32(1)},
			Token: &hadoopcommon.TokenProto{Identifier: []byte{1, 2}, Password: []byte{3}, Kind: proto.String("NMToken"), Service: proto.String("nm1:1")}})
	}
	if r.Intn(2) == 0 {
		resp.AMCommand = hadoopyarn.AMCommandProto_AM_SHUTDOWN.Enum()
	}
	head, err := proto.Marshal(resp)
	require.NoError(t, err)
	// The containers interleaved with the other fields, as field order on
	// the wire is free.
	var b []byte
	for i := range n {
		if i == n/2 {
			b = append(b, head...)
		}
		c1, err := proto.Marshal(randomContainer(r))
		require.NoError(t, err)
		if r.Intn(5) == 0 {
			c2, err := proto.Marshal(randomContainer(r))
			require.NoError(t, err)
			c1 = append(c1, c2...)
		}
		b = protowire.AppendTag(b, allocatedField, protowire.BytesType)
		b = protowire.AppendBytes(b, c1)
	}
	if n < 1 {
		b = append(b, head...)
	}
	return b
}

// The hand decoder gives what proto.Unmarshal and the conversion give, for
// answers of every shape: fields absent, ids with an RM epoch, resources
// with the standard names and units, tokens of any size, containers whose
// parts arrive as two encodings, fields in any order.
func TestDecodeAllocateResponseMatchesProto(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := range 400 {
		b := randomAnswer(t, r, r.Intn(12))
		want, err := viaProto(b)
		require.NoError(t, err)
		got, err := DecodeAllocateResponse(b)
		require.NoError(t, err)
		require.Equal(t, want, got, "answer %d", i)
	}
}

// A container token without a required field is an error, as proto.Unmarshal
// says; so is a truncated answer.
func TestDecodeAllocateResponseErrors(t *testing.T) {
	c, err := proto.MarshalOptions{AllowPartial: true}.Marshal(&hadoopyarn.ContainerProto{
		ContainerToken: &hadoopcommon.TokenProto{Identifier: []byte{1}, Password: []byte{2}, Kind: proto.String("k")}})
	require.NoError(t, err)
	b := protowire.AppendBytes(protowire.AppendTag(nil, allocatedField, protowire.BytesType), c)
	_, perr := viaProto(b)
	require.Error(t, perr)
	_, err = DecodeAllocateResponse(b)
	require.ErrorIs(t, err, errRequired)

	good := randomAnswer(t, rand.New(rand.NewSource(2)), 3)
	_, err = DecodeAllocateResponse(good[:len(good)-1])
	require.Error(t, err)
}

// The decoded token's bytes are the answer's own: the wire buffer can be
// reused without changing them.
func TestDecodeAllocateResponseCopiesTokens(t *testing.T) {
	resp := &hadoopyarn.AllocateResponseProto{AllocatedContainers: []*hadoopyarn.ContainerProto{{
		ContainerToken: &hadoopcommon.TokenProto{Identifier: []byte("ident"), Password: []byte("pass"), Kind: proto.String("k"), Service: proto.String("s")}}}}
	b, err := proto.Marshal(resp)
	require.NoError(t, err)
	got, err := DecodeAllocateResponse(b)
	require.NoError(t, err)
	for i := range b {
		b[i] = 0
	}
	tok := got.Allocated[0].Token
	require.Equal(t, "ident", string(tok.Identifier))
	require.Equal(t, "pass", string(tok.Password))
	tok.Identifier = append(tok.Identifier, 'x')
	require.Equal(t, "pass", string(tok.Password), "appending to the identifier leaves the password alone")
}

// Whenever proto.Unmarshal takes an answer, the hand decoder takes it and
// gives the same.
func FuzzDecodeAllocateResponse(f *testing.F) {
	r := rand.New(rand.NewSource(3))
	for range 8 {
		f.Add(randomAnswer(f, r, r.Intn(4)))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, err := viaProto(b)
		if err != nil {
			return
		}
		got, err := DecodeAllocateResponse(b)
		require.NoError(t, err)
		require.Equal(t, want, got)
	})
}
