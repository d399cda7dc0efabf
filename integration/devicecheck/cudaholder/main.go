//go:build cgo && linux

// Command cudaholder is the worker of `make device-check`: it opens a CUDA
// context on CUDA device 0 (the first GPU its launcher's grant made visible;
// device-check.sh prints which),
// loading libcuda.so.1 with dlopen (no CUDA toolkit needed to build it),
// prints "holding <pid>", and keeps the context until the file named by
// its one argument exists, so that nvidia-smi lists it as a compute
// process on that GPU.
package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>

typedef int (*cu_init_t)(unsigned int);
typedef int (*cu_device_get_t)(int *, int);
typedef int (*cu_ctx_create_t)(void **, unsigned int, int);

static const char *cuda_hold(int *code) {
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	if (h == NULL) {
		*code = -1;
		return dlerror();
	}
	cu_init_t init = (cu_init_t)dlsym(h, "cuInit");
	cu_device_get_t get = (cu_device_get_t)dlsym(h, "cuDeviceGet");
	cu_ctx_create_t create = (cu_ctx_create_t)dlsym(h, "cuCtxCreate_v2");
	if (init == NULL || get == NULL || create == NULL) {
		*code = -2;
		return "libcuda.so.1 lacks cuInit, cuDeviceGet or cuCtxCreate_v2";
	}
	int r = init(0);
	if (r != 0) {
		*code = r;
		return "cuInit failed";
	}
	int dev = 0;
	if ((r = get(&dev, 0)) != 0) {
		*code = r;
		return "cuDeviceGet(0) failed";
	}
	void *ctx = NULL;
	if ((r = create(&ctx, 0, dev)) != 0) {
		*code = r;
		return "cuCtxCreate failed";
	}
	*code = 0;
	return NULL;
}
*/
import "C"

import (
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cudaholder <file whose existence ends the hold>")
		os.Exit(2)
	}
	var code C.int
	if msg := C.cuda_hold(&code); msg != nil {
		fmt.Fprintf(os.Stderr, "cudaholder: %s (CUresult %d)\n", C.GoString(msg), int(code))
		os.Exit(1)
	}
	fmt.Printf("holding %d\n", os.Getpid())
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(os.Args[1]); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "cudaholder: released after 3 min without the end file")
}
