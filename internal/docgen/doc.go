// Command docgen writes mpspatch's CLI reference: one Markdown page per command, and man
// pages in DIR/man, from the cobra command tree (`make docs` runs it on docs/cli).
//
// It is a program of its own rather than a hidden mpspatch command so that cobra/doc and
// the Markdown and YAML packages it pulls in (and their package initialisers) are not part
// of the mpspatch binary, whose every command would otherwise pay for them at start-up.
package main
