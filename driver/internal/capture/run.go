package capture

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Run starts cmd with stdout and stderr given what it writes, and returns
// cmd.Wait's error as soon as the process has exited: the output pipes
// are ours, not os/exec's, so a child of the process that inherited them
// and keeps them open (a script's background job, `sleep 5 &`) does not
// hold the caller up. Everything the process wrote before it exited is
// given; what such a child writes later is not, and once Run returned it
// writes into a closed pipe. The child itself is left running. A cmd
// made with exec.CommandContext is ended through its Cancel when its
// context ends, as with cmd.Run. cmd.Stdout and cmd.Stderr must be unset.
func Run(cmd *exec.Cmd, stdout, stderr io.Writer) error {
	var pipes []*pipe
	closeAll := func() {
		for _, p := range pipes {
			_ = p.r.Close()
			_ = p.w.Close()
		}
	}
	for _, dst := range []io.Writer{stdout, stderr} {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return err
		}
		pipes = append(pipes, &pipe{r: r, w: w, dst: dst, done: make(chan struct{})})
	}
	cmd.Stdout, cmd.Stderr = pipes[0].w, pipes[1].w
	err := cmd.Start()
	for _, p := range pipes {
		_ = p.w.Close() // the process has its own copies now
	}
	if err != nil {
		closeAll()
		return err
	}
	for _, p := range pipes {
		go p.copy()
	}
	err = cmd.Wait() // returns when the process exits: no os/exec pipe to wait for
	for _, p := range pipes {
		p.finish()
	}
	return err
}

// pipe is one output stream of the process.
type pipe struct {
	r, w *os.File
	dst  io.Writer
	done chan struct{}
	err  error // why copy stopped
}

// copy gives dst what the pipe carries until EOF or a read deadline.
func (p *pipe) copy() {
	defer close(p.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := p.r.Read(buf)
		if n > 0 {
			_, _ = p.dst.Write(buf[:n])
		}
		if err != nil {
			p.err = err
			return
		}
	}
}

// drainMax bounds what finish reads after the process exited: a child
// that keeps writing must not keep it reading.
const drainMax = 1 << 20

// finish, once the process has exited, gives dst what is still in the
// pipe (all the process wrote is there: a write to a pipe has reached
// its buffer when it returns) without waiting for an EOF that a child
// holding the pipe would delay, and closes the pipe. A copy still waiting
// is woken by a read deadline; what it left in the pipe is read without
// blocking.
func (p *pipe) finish() {
	_ = p.r.SetReadDeadline(time.Now())
	<-p.done
	defer p.r.Close()
	if !errors.Is(p.err, os.ErrDeadlineExceeded) {
		return // EOF: nobody holds the pipe any more
	}
	if p.r.SetReadDeadline(time.Time{}) != nil {
		return
	}
	rc, err := p.r.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 32<<10)
	_ = rc.Read(func(fd uintptr) bool {
		for total := 0; total < drainMax; {
			n, err := syscall.Read(int(fd), buf)
			if n <= 0 || err != nil {
				return true // empty (EAGAIN), EOF or an error: done, never wait
			}
			_, _ = p.dst.Write(buf[:n])
			total += n
		}
		return true
	})
}
