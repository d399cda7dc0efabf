// Package amcli is the am command: the submission client (am submit,
// status, kill, list, logs, cluster, resources) and the ApplicationMaster's
// wiring in its YARN container (am run). Main parses the command line and
// returns the exit code; cmd/am only calls it. The logic it wires lives in
// yarn/am (the AM core) and yarn/submit (staging, submission, following).
package amcli
