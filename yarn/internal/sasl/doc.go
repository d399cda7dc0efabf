// Package sasl holds the SASL mechanisms Hadoop IPC uses: DIGEST-MD5 (RFC
// 2831, for TOKEN authentication with AMRMTokens and NMTokens) and GSSAPI
// (RFC 4752, Kerberos). Both negotiate the security layer the server demands
// (hadoop.rpc.protection): a Layer wraps every later message, DIGEST-MD5's
// per RFC 2831, GSSAPI's in RFC 4121 wrap tokens. The exchange itself
// (NEGOTIATE, INITIATE, CHALLENGE, …) and the WRAP framing live in package
// ipc; a Mechanism only turns challenges into responses.
package sasl
