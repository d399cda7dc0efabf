package ipc_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/xres/xres/hadoopproto/hadoopyarn"
	"github.com/xres/xres/yarn/internal/ipc"
	"github.com/xres/xres/yarn/yarntest"
)

// Calls over loopback to the in-process fake: the cost of our framing,
// multiplexing and protobuf work, serial and with parallel callers sharing
// one connection. Compare with `go test -bench . ./yarn/internal/ipc`.
func benchConn(b *testing.B) *ipc.Conn {
	srv := yarntest.NewServer(b, yarntest.Options{})
	srv.Handle("getClusterMetrics", func(ctx context.Context, c *yarntest.Call) (proto.Message, error) {
		return &hadoopyarn.GetClusterMetricsResponseProto{ClusterMetrics: &hadoopyarn.YarnClusterMetricsProto{NumNodeManagers: proto.Int32(2)}}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := ipc.Dial(ctx, ipc.Config{Addr: srv.Addr, Protocol: testProtocol, User: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return conn
}

func BenchmarkCall(b *testing.B) {
	conn := benchConn(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := conn.Call(ctx, "getClusterMetrics", &hadoopyarn.GetClusterMetricsRequestProto{}, &hadoopyarn.GetClusterMetricsResponseProto{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallParallel(b *testing.B) {
	conn := benchConn(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := conn.Call(ctx, "getClusterMetrics", &hadoopyarn.GetClusterMetricsRequestProto{}, &hadoopyarn.GetClusterMetricsResponseProto{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
