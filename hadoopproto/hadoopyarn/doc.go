// Package hadoopyarn holds the generated Go types of the YARN records and
// protocol messages xres uses. The .proto sources sit beside the generated
// code; regenerate with `make proto`, never edit the .pb.go files by hand.
package hadoopyarn
