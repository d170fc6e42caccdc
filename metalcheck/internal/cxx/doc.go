// Package cxx reads C++ and Objective-C++ sources the way metalcheck's rules need them: it
// is the audit's reader, and knows nothing of rules, findings or intents.
//
// Tokenize splits a source into comments, preprocessor lines, literals (raw strings and
// @"..." included), numbers, identifiers and punctuators, each with its offsets; Pos gives
// line and column. Read (or a Reader, which reuses its buffers from file to file) keeps
// the code tokens (no comments, directives or tokens of #if 0 branches) and, in one pass
// over them, matches brackets, classifies every brace pair (namespace, class, function,
// lambda, ObjC block, control statement, initialiser, @synchronized), records the
// functions with a body, the variable declarations (globals, static and non-static
// members, function-local statics, atomics, the classes a declaration holds objects of,
// base classes) and the lock statements (std::lock_guard, unique_lock, scoped_lock,
// shared_lock, m.lock()/m.unlock(), noting a mutex reached through another object). It
// marks region scopes that hold a lock throughout (@synchronized bodies, blocks or
// lambdas passed to dispatch_sync/dispatch_sync_with_rethrow (a serial queue) or
// std::call_once, fooLocked() functions, whose caller holds it) and blocks dispatched
// onto a serial queue, synchronously or not, with their queue.
//
// The result, a File, is read-only: its accessors take a code-token, scope or function
// index (Tok, Is, Match, ScopeOf, Scope, Func) and hand out copies of what may be kept
// (Decls, Instances, Bases, LockEvent, Decl). Questions that need more than one token are
// answered from the model: HeldLocks and Locked (a lock counts at a token when it was
// taken earlier in the token's scope or an enclosing one within the same function),
// StripPrefix, TopLevelComma, LastName and the like; Locals answers whether a name is a
// parameter or local of a function, keeping its memory beside the model.
//
// Reading never fails: malformed input gives unmatched brackets and unclosed scopes, not
// errors, and every accessor that looks around a token answers at the edges of the file.
package cxx
