#!/bin/sh
# Builds the fake sysfs tree of a dual-socket host with four AMD Instinct
# MI210 GPUs (KFD topology: CPU nodes 0 and 1, GPU nodes 2-5). Run once:
#   sh mkfixture.sh four-gpus
# The resulting tree is committed; tests copy and break it.
set -e
R=$1/sys
rm -rf "$1"
T=$R/devices/virtual/kfd/kfd/topology
mkdir -p "$T/nodes" "$R/class/kfd" "$R/bus/pci/devices" "$R/bus/pci/drivers/amdgpu"
: > "$R/bus/pci/drivers/amdgpu/bind"; : > "$R/bus/pci/drivers/amdgpu/unbind"
ln -s ../../devices/virtual/kfd/kfd "$R/class/kfd/kfd"
printf '1\n' > "$T/generation_id"
printf 'platform_oem 0\nplatform_id 0\nplatform_rev 0\n' > "$T/system_properties"

cpu_node() { # node cores core_id_base
  n=$T/nodes/$1; mkdir -p "$n"
  printf '0\n' > "$n/gpu_id"; printf '\n' > "$n/name"
  cat > "$n/properties" <<P
cpu_cores_count $2
simd_count 0
mem_banks_count 1
caches_count 0
io_links_count 3
p2p_links_count 0
cpu_core_id_base $3
simd_id_base 0
max_waves_per_simd 0
lds_size_in_kb 0
gds_size_in_kb 0
num_gws 0
wave_front_size 0
array_count 0
simd_arrays_per_engine 0
cu_per_simd_array 0
simd_per_cu 0
max_slots_scratch_cu 0
gfx_target_version 0
vendor_id 0
device_id 0
location_id 0
domain 0
drm_render_minor 0
hive_id 0
num_sdma_engines 0
num_sdma_xgmi_engines 0
num_sdma_queues_per_engine 0
num_cp_queues 0
max_engine_clk_ccompute 3700
P
}

gpu_node() { # node gpu_id bus render_minor unique_id numa cpulist
  n=$T/nodes/$1; mkdir -p "$n"
  printf '%s\n' "$2" > "$n/gpu_id"; printf 'aldebaran\n' > "$n/name"
  loc=$(( 0x$3 << 8 ))
  cat > "$n/properties" <<P
cpu_cores_count 0
simd_count 416
mem_banks_count 1
caches_count 207
io_links_count 1
p2p_links_count 3
cpu_core_id_base 0
simd_id_base 2147487744
max_waves_per_simd 8
lds_size_in_kb 64
gds_size_in_kb 0
num_gws 64
wave_front_size 64
array_count 8
simd_arrays_per_engine 1
cu_per_simd_array 13
simd_per_cu 4
max_slots_scratch_cu 32
gfx_target_version 90010
vendor_id 4098
device_id 29711
location_id $loc
domain 0
drm_render_minor $4
hive_id 0
num_sdma_engines 2
num_sdma_xgmi_engines 6
num_sdma_queues_per_engine 8
num_cp_queues 24
max_engine_clk_fcompute 1700
local_mem_size 0
fw_version 78
capability 746840704
debug_prop 1495
sdma_fw_version 8
unique_id $5
num_xcc 1
max_engine_clk_ccompute 3700
P
  # The GPU's PCI function, behind a root port.
  port=0000:$3:00.0
  rp="pci0000:$3/0000:$3:01.0"
  d=$R/devices/$rp/$port; mkdir -p "$d"
  printf '0x1002\n' > "$d/vendor"; printf '0x740f\n' > "$d/device"; printf '0x038000\n' > "$d/class"
  printf '%s\n' "$6" > "$d/numa_node"; printf '%s\n' "$7" > "$d/local_cpulist"
  ln -s "../../../devices/$rp/$port" "$R/bus/pci/devices/$port"
  ln -s ../../../../bus/pci/drivers/amdgpu "$d/driver"
}

cpu_node 0 32 0
cpu_node 1 32 32
gpu_node 2 24718 03 128 8425143389541296640 0 0-31,64-95
gpu_node 3 59213 23 129 12437394850823017066 0 0-31,64-95
gpu_node 4 1863 83 130 3131553520716235777 1 32-63,96-127
gpu_node 5 41002 a3 131 17293822569102704641 1 32-63,96-127
