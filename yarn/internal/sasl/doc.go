// Package sasl holds the SASL mechanisms Hadoop IPC uses: DIGEST-MD5 (RFC
// 2831, for TOKEN authentication with AMRMTokens and NMTokens) and GSSAPI
// (Kerberos). The exchange itself (NEGOTIATE, INITIATE, CHALLENGE, …) lives in
// package ipc; a Mechanism only turns challenges into responses.
package sasl
