// Package security holds Hadoop security tokens and credentials: the
// token storage file ("HDTS", format versions 0 Writable and 1 protobuf)
// that YARN hands every container through HADOOP_TOKEN_FILE_LOCATION, token
// selection by kind and service, and redacted printing. Token passwords
// and identifiers never appear in String output, logs or errors.
package security
