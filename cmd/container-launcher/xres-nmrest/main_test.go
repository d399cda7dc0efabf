package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/xres/xres/driver/gpu"
	"github.com/xres/xres/driver/gpu/nmhelper"
	"github.com/xres/xres/yarn/amplan"
)

// go build names this command after its folder; the launcher looks for
// that name and am submit ships it under that name.
func TestHelperName(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if dir := filepath.Base(wd); dir != gpu.NMRESTHelperName || amplan.NMRESTHelperName != gpu.NMRESTHelperName || nmhelper.Name != gpu.NMRESTHelperName {
		t.Fatalf("folder %q, launcher looks for %q, am ships %q, the helper calls itself %q: want one name",
			dir, gpu.NMRESTHelperName, amplan.NMRESTHelperName, nmhelper.Name)
	}
}
