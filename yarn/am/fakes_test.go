package am

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/xres/xres/yarn"
	"github.com/xres/xres/yarn/security"
)

// fakeRM is a scripted ResourceManager: each Allocate call runs the next
// step (or answers empty once the script is done) and records the request.
type fakeRM struct {
	mu        sync.Mutex
	register  yarn.RegisterResponse
	regErr    error
	regErrAt  func(n int) error // when set, the error of the nth registration (1-based)
	registers int
	steps     []func(req yarn.AllocateRequest) (yarn.AllocateResponse, error)
	requests  []yarn.AllocateRequest
	finished  []yarn.FinishRequest
	finishErr error
}

func (f *fakeRM) Register(ctx context.Context, req yarn.RegisterRequest) (yarn.RegisterResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registers++
	if f.regErrAt != nil {
		return f.register, f.regErrAt(f.registers)
	}
	return f.register, f.regErr
}

func (f *fakeRM) Allocate(ctx context.Context, req yarn.AllocateRequest) (yarn.AllocateResponse, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	n := len(f.requests)
	var step func(yarn.AllocateRequest) (yarn.AllocateResponse, error)
	if n <= len(f.steps) {
		step = f.steps[n-1]
	}
	f.mu.Unlock()
	if step == nil {
		if n > 1000 {
			return yarn.AllocateResponse{}, errors.New("fake RM: script exhausted long ago")
		}
		return yarn.AllocateResponse{}, nil
	}
	return step(req)
}

func (f *fakeRM) Finish(ctx context.Context, req yarn.FinishRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished = append(f.finished, req)
	return f.finishErr
}

// fakeNM records starts and stops; startErr fails chosen containers.
type fakeNM struct {
	mu       sync.Mutex
	started  []string
	tokens   map[string]security.Token
	launches []yarn.LaunchContext
	stopped  []string
	startErr map[string]error
}

func (f *fakeNM) StartContainer(ctx context.Context, c yarn.Container, tok security.Token, l yarn.LaunchContext) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.startErr[c.ID]; err != nil {
		return err
	}
	f.started = append(f.started, c.ID)
	if f.tokens == nil {
		f.tokens = map[string]security.Token{}
	}
	f.tokens[c.ID] = tok
	f.launches = append(f.launches, l)
	return nil
}

func (f *fakeNM) StopContainer(ctx context.Context, c yarn.Container, tok security.Token) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = append(f.stopped, c.ID)
	return nil
}

// fakeLogs serves canned stderr per container.
type fakeLogs map[string][]string

func (f fakeLogs) Tail(ctx context.Context, c yarn.Container, file string, lines int) ([]string, error) {
	l, ok := f[c.ID]
	if !ok || file != "stderr" {
		return nil, fmt.Errorf("no %s for %s", file, c.ID)
	}
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return l, nil
}

// settled wraps after so that each heartbeat first waits until the AM has
// no container start queued or in flight: scripted tests then see the
// starts of one heartbeat before the next.
func settled(a *AM, after func(time.Duration) <-chan time.Time) func(time.Duration) <-chan time.Time {
	return func(d time.Duration) <-chan time.Time {
		for {
			a.mu.Lock()
			idle := a.starts.Idle()
			a.mu.Unlock()
			if idle {
				return after(d)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func ready(time.Duration) <-chan time.Time {
	c := make(chan time.Time, 1)
	c <- time.Time{}
	return c
}

func ctr(n int, node string) yarn.Container {
	return yarn.Container{
		ID:                  fmt.Sprintf("container_1_0001_01_%06d", n),
		NodeID:              node + ":45454",
		NodeHTTP:            node + ":8042",
		Resource:            yarn.Resource{MemoryMB: 2048, VCores: 1},
		AllocationRequestID: WorkerAskID,
	}
}

func done(c yarn.Container, exit int) yarn.Completed {
	return yarn.Completed{ID: c.ID, ExitStatus: exit, Diagnostics: fmt.Sprintf("Exit code: %d", exit)}
}

func alloc(cs ...yarn.Container) func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
	return func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
		return yarn.AllocateResponse{Allocated: cs}, nil
	}
}

func complete(cs ...yarn.Completed) func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
	return func(yarn.AllocateRequest) (yarn.AllocateResponse, error) {
		return yarn.AllocateResponse{Completed: cs}, nil
	}
}
