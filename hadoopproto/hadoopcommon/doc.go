// Package hadoopcommon holds the generated Go types of the Hadoop IPC
// messages xres uses (RPC headers, SASL, connection context, tokens and the
// version-1 token file). The .proto sources sit beside the generated code;
// regenerate with `make proto`, never edit the .pb.go files by hand.
package hadoopcommon
