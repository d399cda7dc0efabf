// Package clitest tests the built commands, am and container-launcher, as
// a user runs them: exit codes, messages, and that no secret is ever
// shown. It has no code of its own; see its tests.
package clitest
