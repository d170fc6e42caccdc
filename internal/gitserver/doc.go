// Package gitserver is a smart-HTTP git server for tests and benchmarks: `git
// http-backend` behind net/http/cgi on a loopback TLS listener, serving every bare
// repository under a directory. It lets tests exercise what mpspatch does against a real
// remote — shallow and partial (--filter) fetches, fetches by SHA, ls-remote, submodules,
// credentials — without the network.
//
// The server counts what it serves: every request with the object IDs the client wanted
// and the bytes sent back, so a test can assert that a second fetch asked for no blob the
// first already had. It can require HTTP basic credentials, and can hold pack responses
// until told to go on, so a test can interrupt a clone mid-fetch deterministically.
//
// Clients reach it through the environment Env returns (GIT_SSL_CAINFO naming the test
// certificate), so the https:// URLs it hands out verify like any other.
package gitserver
