// Package examples holds example configurations for the device drivers
// beyond NVIDIA GPUs (two-fpgas.yaml, four-amd-gpus.yaml, plugin-fpga.yaml)
// on the fake sysfs trees in driver/pci/testdata and driver/amd/testdata.
// Its test runs `container-launcher probe --json` on each and compares the
// report with the golden file in testdata/ (rewrite with go test -update),
// so the examples in the README stay true.
package examples
