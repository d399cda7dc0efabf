package yarn

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/security"
)

func TestContainerIDs(t *testing.T) {
	tests := []struct{ in string }{
		{"container_1410901177871_0001_01_000005"},
		{"container_e17_1410901177871_0001_01_000005"},
		{"container_e17_1410901177871_12345_02_1234567"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			id, err := ParseContainerID(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.in, ContainerID(id))
		})
	}
	id, err := ParseContainerID("container_e17_1410901177871_0001_01_000005")
	require.NoError(t, err)
	require.Equal(t, int64(17)<<40|5, id.GetId(), "epoch above bit 40")
	require.Equal(t, "appattempt_1410901177871_0001_000001", AttemptID(id.GetAppAttemptId()))
	for _, bad := range []string{"", "container_1_2_3", "application_1_2", "container_ex_1_2_3_4", "container_1_2_3_-4"} {
		_, err := ParseContainerID(bad)
		require.Error(t, err, bad)
	}
}

// TestContainerIDFormat checks the hand-written formatting against fmt's
// (the format YARN's ContainerId.toString writes), field widths exceeded
// and the epoch included, and NodeID against host:port.
func TestContainerIDFormat(t *testing.T) {
	for _, ts := range []int64{0, 1, 1410901177871} {
		for _, app := range []int32{0, 1, 42, 9999, 12345} {
			for _, att := range []int32{1, 7, 99, 123} {
				for _, n := range []int64{0, 5, 999999, 1234567, 1<<40 - 1} {
					for _, epoch := range []int64{0, 3, 17, 123} {
						a := &hadoopyarn.ApplicationIdProto{Id: proto.Int32(app), ClusterTimestamp: proto.Int64(ts)}
						p := &hadoopyarn.ContainerIdProto{AppId: a, Id: proto.Int64(epoch<<40 | n),
							AppAttemptId: &hadoopyarn.ApplicationAttemptIdProto{ApplicationId: a, AttemptId: proto.Int32(att)}}
						want := fmt.Sprintf("container_%d_%04d_%02d_%06d", ts, app, att, n)
						if epoch > 0 {
							want = fmt.Sprintf("container_e%02d_%d_%04d_%02d_%06d", epoch, ts, app, att, n)
						}
						require.Equal(t, want, ContainerID(p))
					}
				}
			}
		}
	}
	require.Equal(t, "nm1.example.com:45454", NodeID(&hadoopyarn.NodeIdProto{Host: proto.String("nm1.example.com"), Port: proto.Int32(45454)}))
}

func TestApplicationIDs(t *testing.T) {
	id, err := ParseApplicationID("application_1700000000000_0042")
	require.NoError(t, err)
	require.Equal(t, int32(42), id.GetId())
	require.Equal(t, "application_1700000000000_0042", ApplicationID(id))
	require.Equal(t, "application_1_12345", ApplicationID(&hadoopyarn.ApplicationIdProto{Id: proto.Int32(12345), ClusterTimestamp: proto.Int64(1)}))
	_, err = ParseApplicationID("application_x_1")
	require.ErrorContains(t, err, "application_x_1")
}

// Fields out of YARN's ranges are refused, not wrapped into another id.
func TestIDsOutOfRange(t *testing.T) {
	for _, bad := range []string{
		"application_1700000000000_2147483648", // app number above int32
		"application_1700000000000_-1",
		"application_-5_1",
	} {
		_, err := ParseApplicationID(bad)
		require.Error(t, err, bad)
		require.ErrorContains(t, err, bad)
	}
	for _, bad := range []string{
		"container_1700000000000_4294967297_01_000001",    // app number wraps to 1 as int32
		"container_1700000000000_0001_4294967298_000001",  // attempt wraps to 2
		"container_1700000000000_0001_01_1099511627776",   // container number needs more than 40 bits
		"container_e8388608_1700000000000_0001_01_000001", // epoch does not fit above bit 40
		"container_e-1_1700000000000_0001_01_000001",
	} {
		_, err := ParseContainerID(bad)
		require.Error(t, err, bad)
		require.ErrorContains(t, err, bad)
	}
	id, err := ParseContainerID("container_e8388607_1700000000000_2147483647_2147483647_1099511627775")
	require.NoError(t, err, "the largest valid fields")
	require.Equal(t, "container_e8388607_1700000000000_2147483647_2147483647_1099511627775", ContainerID(id))
}

func TestTokenAttempt(t *testing.T) {
	tok := amrmToken(t, 4, "")
	att, err := TokenAttempt(tok)
	require.NoError(t, err)
	require.Equal(t, "appattempt_1700000000000_0003_000001", AttemptID(att))
	_, err = TokenAttempt(&security.Token{Identifier: []byte{0xff, 0xff}, Kind: "X"})
	require.Error(t, err)
	_, err = TokenAttempt(nil)
	require.ErrorIs(t, err, ErrNoToken)
}

func TestResourceValue(t *testing.T) {
	r := NewResource(1024, 2, map[string]int64{"yarn.io/gpu": 1, "yarn.io/fpga": 3})
	for name, want := range map[string]int64{"memory-mb": 1024, "vcores": 2, "yarn.io/gpu": 1, "yarn.io/fpga": 3} {
		got, ok := ResourceValue(r, name)
		require.True(t, ok, name)
		require.Equal(t, want, got, name)
	}
	_, ok := ResourceValue(r, "other")
	require.False(t, ok)
	require.Equal(t, "yarn.io/fpga", r.GetResourceValueMap()[0].GetKey(), "sorted keys")
}

// FuzzParseContainerID: never panics; what parses formats back to an id
// that parses to the same fields.
func FuzzParseContainerID(f *testing.F) {
	for _, s := range []string{"container_1410901177871_0001_01_000005", "container_e17_1410901177871_0001_01_000005",
		"container_e8388608_1_1_1_1", "container_1_4294967297_1_1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseContainerID(s)
		if err != nil {
			return
		}
		back, err := ParseContainerID(ContainerID(id))
		require.NoError(t, err)
		require.True(t, proto.Equal(id, back), "%s → %s", s, ContainerID(id))
	})
}
