// Package contract holds what the container-launcher tells the others: the
// info file a worker reads (its path in XRES_RESOURCES_FILE: each resource's
// devices with their properties) and the device report it posts to the
// ApplicationMaster (XRES_REPORT_URL). The launcher's exit codes, the
// third part of that contract, are in resources/exitcode.
package contract
