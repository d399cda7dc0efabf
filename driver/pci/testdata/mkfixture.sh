#!/bin/sh
# Builds the 2-FPGA fake sysfs tree (run once; the tree is committed).
set -e
R=$1/sys
rm -rf "$1"; mkdir -p "$R/bus/pci/devices" "$R/bus/pci/drivers"
# dev <parent-path-under-devices> <addr> <vendor> <device> <class> <numa> <cpulist> [driver]
dev() {
  d="$R/devices/$1/$2"; mkdir -p "$d"
  printf '%s\n' "$3" > "$d/vendor"; printf '%s\n' "$4" > "$d/device"; printf '%s\n' "$5" > "$d/class"
  printf '%s\n' "$6" > "$d/numa_node"; printf '%s\n' "$7" > "$d/local_cpulist"
  printf '0x0000\n' > "$d/subsystem_vendor"; printf '0x00\n' > "$d/revision"
  ln -s "../../../devices/$1/$2" "$R/bus/pci/devices/$2"
  if [ -n "$8" ]; then
    mkdir -p "$R/bus/pci/drivers/$8"; : > "$R/bus/pci/drivers/$8/bind"; : > "$R/bus/pci/drivers/$8/unbind"
    up=$(echo "devices/$1/$2" | sed 's#[^/][^/]*#..#g')
    ln -s "$up/bus/pci/drivers/$8" "$d/driver"
  fi
}
# render <device path under devices> <minor>: the DRM render node XRT's xocl
# driver gives a user function (/dev/dri/renderD<minor>, char 226:<minor>).
render() {
  d="$R/devices/$1/drm/renderD$2"; mkdir -p "$d"
  printf '226:%s\n' "$2" > "$d/dev"
}
dev pci0000:00 0000:00:00.0 0x8086 0x2020 0x060000 0 0-15,32-47
dev pci0000:17/0000:17:00.0 0000:18:00.0 0x8086 0x1572 0x020000 0 0-15,32-47 i40e
dev pci0000:17 0000:17:00.0 0x8086 0x2030 0x060400 0 0-15,32-47 pcieport
dev pci0000:3a 0000:3a:00.0 0x8086 0x2030 0x060400 0 0-15,32-47 pcieport
dev pci0000:3a/0000:3a:00.0 0000:3b:00.0 0x10ee 0x5004 0x120000 0 0-15,32-47 xclmgmt
dev pci0000:3a/0000:3a:00.0 0000:3b:00.1 0x10ee 0x5005 0x120000 0 0-15,32-47 xocl
render pci0000:3a/0000:3a:00.0/0000:3b:00.1 128
dev pci0000:5d 0000:5d:00.0 0x8086 0x2030 0x060400 0 0-15,32-47 pcieport
dev pci0000:5d/0000:5d:00.0 0000:5e:00.0 0x10de 0x1eb8 0x030200 0 0-15,32-47 nvidia
dev pci0000:ae 0000:ae:00.0 0x8086 0x2030 0x060400 1 16-31,48-63 pcieport
dev pci0000:ae/0000:ae:00.0 0000:af:00.0 0x10ee 0x7038 0x058000 -1 0-63
dev pci0000:d7 0000:d7:00.0 0x8086 0x2030 0x060400 1 16-31,48-63 pcieport
dev pci0000:d7/0000:d7:00.0 0000:d8:00.0 0x10ee 0x5004 0x120000 1 16-31,48-63 xclmgmt
dev pci0000:d7/0000:d7:00.0 0000:d8:00.1 0x10ee 0x5005 0x120000 1 16-31,48-63 xocl
render pci0000:d7/0000:d7:00.0/0000:d8:00.1 129
