// Package redact takes credentials out of text before it leaves mpspatch: what the printer
// writes (text and JSON, error documents included), the log files internal/run writes
// (command lines and the tools' output), git's command lines in error messages, and the
// configuration `mpspatch config` shows. It is the one place that decides what a secret in
// a URL looks like, so every path out hides the same things.
//
// The rule is textual, so it also covers URLs that net/url rejects (a password holding a
// quote, a bad percent escape), which are the ones most often echoed back in an error:
//
//   - After every "://", the authority runs to the first '/', '?', '#', white space or
//     control character. When it holds an '@', everything before its last '@' is the
//     user-info, and is replaced by "***".
//   - A lone user name (no ':') is a secret too, except under ssh (ssh, git+ssh, ssh+git,
//     sftp), where it is the login (ssh://git@host). Under https a lone user part is how
//     GitHub-style hosts take a token (https://TOKEN@github.com/...), and ccache reads a
//     lone user part of a redis:// or rediss:// URL as the password (redis://SECRET@host).
//   - URL, for a value known to be a URL (a config key), also hides the user-info of an
//     address without "://" whose user part holds a ':' (user:password@host:path).
//
// What it cannot see: a password holding an unescaped '/', '?' or '#' (git itself reads
// the URL as having no credentials then, so it never reaches git as one), secrets outside
// the user-info (a token in a query string), and secrets that are not in URLs at all.
// Those stay out of mpspatch's output only by not being handed to it.
package redact
