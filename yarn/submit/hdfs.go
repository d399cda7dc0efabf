package submit

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/colinmarc/hdfs/v2"

	"github.com/xres/xres/conf"
	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/hdfstoken"
)

// hdfsFS adapts a colinmarc/hdfs/v2 client to FS. The client takes no
// context: each call checks ctx first, and a call in flight runs to its end.
type hdfsFS struct{ c *hdfs.Client }

var _ FS = hdfsFS{}

// NewHDFS adapts an HDFS client to FS.
func NewHDFS(c *hdfs.Client) FS { return hdfsFS{c: c} }

func (h hdfsFS) MkdirAll(ctx context.Context, dir string, perm os.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return h.c.MkdirAll(dir, perm)
}

// CopyToRemote copies local to remote. When the NameNode has not yet seen
// the minimum replication at close (ErrReplicating), Close is retried with
// a growing pause, as the Java client does.
func (h hdfsFS) CopyToRemote(ctx context.Context, local, remote string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	src, err := os.Open(local)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := h.c.Create(remote)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		return err
	}
	return closeReplicated(ctx, dst.Close)
}

// maxCloseAttempts bounds closeReplicated (about 30 s of pauses).
const maxCloseAttempts = 20

// closeReplicated calls closeFn until it stops failing with ErrReplicating.
func closeReplicated(ctx context.Context, closeFn func() error) error {
	pause := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := closeFn()
		if !hdfs.IsErrReplicating(err) || attempt == maxCloseAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (still replicating when %w)", err, ctx.Err())
		case <-time.After(pause):
		}
		if pause < 2*time.Second {
			pause *= 2
		}
	}
}

func (h hdfsFS) Stat(ctx context.Context, name string) (os.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return h.c.Stat(name)
}

func (h hdfsFS) Chmod(ctx context.Context, name string, perm os.FileMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return h.c.Chmod(name, perm)
}

var _ Chmoder = hdfsFS{}

func (h hdfsFS) Rename(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := h.c.Stat(to); err == nil {
		return fmt.Errorf("rename %s to %s: %w", from, to, os.ErrExist)
	}
	return h.c.Rename(from, to)
}

var _ Renamer = hdfsFS{}

func (h hdfsFS) RemoveAll(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return h.c.RemoveAll(name)
}

// DialHDFS connects to the NameNode(s) of the Hadoop configuration (fs.defaultFS
// or dfs.namenode.rpc-address.*) as user. On a Kerberized cluster it needs
// krb (KerberosLogin): the NameNode's principal is
// dfs.namenode.kerberos.principal (_HOST becomes the NameNode's host) and
// dfs.data.transfer.protection applies to the DataNodes; user is then
// ignored (the principal names the user).
func DialHDFS(hc *conf.HadoopConfig, user string, krb *yarn.Kerberos) (*hdfs.Client, error) {
	opts := hdfstoken.ClientOptions(hc)
	if len(opts.Addresses) == 0 {
		return nil, fmt.Errorf("connect to HDFS: no namenode address in fs.defaultFS or dfs.namenode.rpc-address (HADOOP_CONF_DIR %s)", hc.Dir())
	}
	if opts.KerberosClient != nil || Secure(hc) {
		if krb == nil || krb.Client == nil {
			return nil, fmt.Errorf("connect to HDFS %v: hadoop.security.authentication is kerberos: %w", opts.Addresses, yarn.ErrNoCredentials)
		}
		if opts.KerberosServicePrincipleName == "" {
			return nil, fmt.Errorf("connect to HDFS %v: dfs.namenode.kerberos.principal is not set", opts.Addresses)
		}
		opts.KerberosClient = krb.Client
	} else {
		opts.User = user
	}
	c, err := hdfs.NewClient(opts)
	if err != nil {
		return nil, fmt.Errorf("connect to HDFS %v: %w", opts.Addresses, err)
	}
	return c, nil
}
