package metalcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseIntent(t *testing.T) {
	tests := []struct {
		in   string
		want Intent
	}{
		{"thread-local MPSGraphCache::_instance_cache in aten/src/ATen/native/mps/OperationUtils.h",
			Intent{Kind: IntentThreadLocal, Symbol: "MPSGraphCache::_instance_cache", Path: "aten/src/ATen/native/mps/OperationUtils.h"}},
		{"guarded libMap by mapMutex in a/b.mm", Intent{Kind: IntentGuarded, Symbol: "libMap", Lock: "mapMutex", Path: "a/b.mm"}},
		{"guarded ::Lib::map by Lib::m in x.mm", Intent{Kind: IntentGuarded, Symbol: "Lib::map", Lock: "Lib::m", Path: "x.mm"}},
		{"no-finding MPS006 in a.mm", Intent{Kind: IntentNoFinding, Rule: "MPS006", Path: "a.mm"}},
		{"no-finding global-hot-path-mutex in a.mm", Intent{Kind: IntentNoFinding, Rule: "MPS006", Path: "a.mm"}},
		{`present "std::lock_guard<std::mutex> g(m);" in a.mm`, Intent{Kind: IntentPresent, Text: "std::lock_guard<std::mutex> g(m);", Path: "a.mm"}},
		{`absent "false && \"x\"" in a.mm`, Intent{Kind: IntentAbsent, Text: `false && "x"`, Path: "a.mm"}},
		{"  thread-local  x   in   a.h  ", Intent{Kind: IntentThreadLocal, Symbol: "x", Path: "a.h"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			have, err := ParseIntent(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if have != tt.want {
				t.Fatalf("have %+v, want %+v", have, tt.want)
			}
			again, err := ParseIntent(have.String())
			if err != nil || again != have {
				t.Errorf("String() %q does not parse back: %+v, %v", have.String(), again, err)
			}
		})
	}
}

func TestParseIntentErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty"},
		{"thread_local x in a.h", `unknown form "thread_local"`},
		{"thread-local in a.h", "missing SYMBOL"},
		{"thread-local x", `want "in PATH"`},
		{"thread-local x in", "missing PATH"},
		{"thread-local 1x in a.h", "not a C++ name"},
		{"guarded m in a.h", `want "by LOCK"`},
		{"guarded m by in a.h", "missing LOCK"},
		{"no-finding MPS999 in a.h", "unknown audit rule"},
		{"present x in a.h", "double-quoted"},
		{`present "x in a.h`, "bad quoted text"},
		{`present "" in a.h`, "empty text"},
		{`present "x"in a.h`, `want " in PATH"`},
		{"thread-local x in /abs/a.h", "relative"},
		{"thread-local x in ../a.h", "inside the tree"},
		{"thread-local x in a//b.h", "clean path"},
		{"thread-local x in a b.h", "without spaces"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseIntent(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("have %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

const intentSrcHeader = `#pragma once
#include <mutex>
#include <unordered_map>
class Lib {
 public:
  int get(int k);
  int peek(int k);
 private:
  std::unordered_map<int, int> libMap;
  std::mutex mapMutex;
  static thread_local Lib* _instance;
  static Lib* _shared;
};
`

const intentSrcBody = `#include "Lib.h"
thread_local Lib* Lib::_instance = nullptr;
Lib* Lib::_shared = nullptr;
int Lib::get(int k) {
  std::lock_guard<std::mutex> g(mapMutex);
  return libMap[k] = 1;   // guarded
}
int Lib::peek(int k) {
  return libMap.count(k); // not guarded
}
static std::mutex g_m;
void op() {
  std::lock_guard<std::mutex> lock(g_m);  /* comment */
}
`

const intentSrcFixed = `#include "Lib.h"
int Lib::get(int k) {
  std::lock_guard<std::mutex> g(mapMutex);
  return libMap[k] = 1;
}
int Lib::peek(int k) {
  mapMutex.lock();
  int n = libMap.count(k);
  mapMutex.unlock();
  return n;
}
int Lib::sizeLocked() { return libMap.size(); } // the caller holds mapMutex
`

func TestEvaluateIntents(t *testing.T) {
	files := map[string]string{
		"mps/Lib.h":                       intentSrcHeader,
		"mps/Lib.mm":                      intentSrcBody,
		"mps/Fixed.mm":                    intentSrcFixed,
		"native/mps/operations/Op.mm":     intentSrcBody,
		"native/mps/operations/Clean.mm":  "void op() {}\n",
		"native/mps/operations/Clean.h":   "#pragma once\n",
		"native/mps/operations/NoHdr.cpp": "int x;\n",
	}
	read := func(p string) ([]byte, error) {
		s, ok := files[p]
		if !ok {
			return nil, fmt.Errorf("open %s: %w", p, os.ErrNotExist)
		}
		return []byte(s), nil
	}
	tests := []struct {
		intent     string
		wantOK     bool
		wantDetail string
	}{
		{"thread-local Lib::_instance in mps/Lib.h", true, ""},
		{"thread-local Lib::_instance in mps/Lib.mm", true, ""},
		{"thread-local Lib::_shared in mps/Lib.h", false, "mps/Lib.h:12: Lib::_shared is declared without thread_local"},
		{"thread-local Lib::_missing in mps/Lib.h", false, "no declaration of Lib::_missing"},
		{"thread-local Lib::_instance in mps/Nope.h", false, "read mps/Nope.h"},
		{"guarded Lib::libMap by mapMutex in mps/Lib.mm", false, "mps/Lib.mm:9:10: Lib::libMap used in Lib::peek without holding mapMutex"},
		{"guarded Lib::libMap by mapMutex in mps/Fixed.mm", true, ""},
		{"guarded libMap by otherMutex in mps/Fixed.mm", false, "without holding otherMutex"},
		{"guarded nothing by m in mps/Fixed.mm", false, "no use of nothing"},
		{"no-finding MPS006 in native/mps/operations/Op.mm", false, "native/mps/operations/Op.mm:13:36"},
		{"no-finding MPS006 in native/mps/operations/Clean.mm", true, ""},
		{"no-finding MPS002 in mps/Lib.mm", true, ""},
		{"no-finding MPS002 in native/mps/operations/NoHdr.cpp", true, ""},
		{`present "std::lock_guard<std::mutex>   lock ( g_m ) ;" in mps/Lib.mm`, true, ""},
		{`present "lock(g_m); }" in mps/Lib.mm`, true, ""},
		{`present "comment" in mps/Lib.mm`, false, "not found"},
		{`absent "libMap.count(k)" in mps/Lib.mm`, false, "mps/Lib.mm:9:"},
		{`absent "false && x" in mps/Lib.mm`, true, ""},
		{`present "#include \"Lib.h\"" in mps/Lib.mm`, true, ""},
	}
	var intents []Intent
	for _, tt := range tests {
		in, err := ParseIntent(tt.intent)
		if err != nil {
			t.Fatalf("parse %q: %v", tt.intent, err)
		}
		intents = append(intents, in)
	}
	results := EvaluateIntents(intents, read)
	if len(results) != len(tests) {
		t.Fatalf("have %d results, want %d", len(results), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.intent, func(t *testing.T) {
			r := results[i]
			if r.Intent != intents[i] {
				t.Errorf("result %d is for %v, want %v (order)", i, r.Intent, intents[i])
			}
			if r.OK != tt.wantOK || !tt.wantOK && !strings.Contains(r.Detail, tt.wantDetail) {
				t.Errorf("have ok=%v %q, want ok=%v with %q", r.OK, r.Detail, tt.wantOK, tt.wantDetail)
			}
		})
	}
}

// TestIntentsOnFixtureTree checks intents against the fixture tree the audit tests use.
func TestIntentsOnFixtureTree(t *testing.T) {
	read := func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(fixtureTree, filepath.FromSlash(p))) }
	tests := []struct {
		intent string
		wantOK bool
	}{
		{"no-finding MPS003 in aten/src/ATen/mps/Stream.mm", false},
		{"no-finding MPS005 in aten/src/ATen/mps/Singleton.mm", true},
		{"thread-local t_widget in aten/src/ATen/mps/Singleton.mm", true},
		{"thread-local g_widget in aten/src/ATen/mps/Singleton.mm", false},
		{"guarded Library::libMap by mapMutex in aten/src/ATen/mps/Containers.mm", false},
		{"guarded g_map by g_map_mutex in aten/src/ATen/mps/Tricky.mm", false},
	}
	for _, tt := range tests {
		t.Run(tt.intent, func(t *testing.T) {
			in, err := ParseIntent(tt.intent)
			if err != nil {
				t.Fatal(err)
			}
			r := EvaluateIntents([]Intent{in}, read)[0]
			if r.OK != tt.wantOK {
				t.Errorf("have ok=%v (%s), want %v", r.OK, r.Detail, tt.wantOK)
			}
		})
	}
}

func FuzzParseIntent(f *testing.F) {
	for _, s := range []string{
		"thread-local A::b in x/y.h", "guarded m by l in a.mm", "no-finding MPS001 in a.mm",
		`present "a \"b\"" in a.mm`, `absent "x" in a`, "", "guarded", `present "`, "no-finding lazy-singleton in ../x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in, err := ParseIntent(s)
		if err != nil {
			return
		}
		again, err := ParseIntent(in.String())
		if err != nil || again != in {
			t.Fatalf("%q parsed to %+v whose String %q parses to %+v, %v", s, in, in.String(), again, err)
		}
	})
}
