// Package k8spod renders a Kubernetes pod for one worker from a Flink
// configuration: each resource's kubernetes.config-key (nvidia.com/gpu,
// amd.com/gpu, …) in the container's requests and limits, and the
// container-launcher in front of the worker command, so a Flink job's
// external resources mean the same on Kubernetes as on YARN
// (`am render --kubernetes`).
package k8spod
