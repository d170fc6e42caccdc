package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"
)

// This file reads the document a second time, as TOML, to say what is wrong with it in the
// config's own words. go-toml's decoder knows the Go types it decodes into and says so
// ("cannot decode TOML string into struct field config.Build.Jobs of type int"); the
// fields' TOML names and what each takes are what a person editing mpspatch.toml needs.
// The walk runs only when decoding has failed or a value was refused, so a good config
// costs nothing at start-up.

var (
	configType   = reflect.TypeOf(Config{})
	durationType = reflect.TypeOf(Duration{})
)

// entry is one key the document sets: its dotted key, where the key and its value are,
// and the value's node (nil for a [table] header).
type entry struct {
	key        []string
	keyLine    int
	keyColumn  int
	line       int // of the value; the key's when the value has no position of its own (arrays)
	column     int
	value      *unstable.Node
	header     bool // a [table] or [[array table]] header
	arrayTable bool
}

// walk calls visit for every key data sets, in document order: table headers, key/value
// pairs (with the current table's key in front), and the pairs inside inline tables. It
// stops when visit returns false, and at a syntax error (decoding reports those).
func walk(data []byte, visit func(p *unstable.Parser, e entry) bool) {
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		expr := p.Expression()
		switch expr.Kind {
		case unstable.Table, unstable.ArrayTable:
			key, first := keyParts(expr.Key())
			table = key
			e := entry{key: key, header: true, arrayTable: expr.Kind == unstable.ArrayTable}
			if first != nil {
				pos := p.Shape(first.Raw).Start
				e.keyLine, e.keyColumn, e.line, e.column = pos.Line, pos.Column, pos.Line, pos.Column
			}
			if !visit(&p, e) {
				return
			}
		case unstable.KeyValue:
			if !walkKeyValue(&p, table, expr, visit) {
				return
			}
		}
	}
}

// walkKeyValue visits one key/value pair under prefix, then the pairs of an inline table
// value.
func walkKeyValue(p *unstable.Parser, prefix []string, kv *unstable.Node, visit func(*unstable.Parser, entry) bool) bool {
	parts, _ := keyParts(kv.Key())
	key := append(slices.Clone(prefix), parts...)
	v := kv.Value()
	start := p.Shape(kv.Raw).Start
	e := entry{key: key, keyLine: start.Line, keyColumn: start.Column, line: start.Line, column: start.Column, value: v}
	if v.Raw.Length > 0 {
		pos := p.Shape(v.Raw).Start
		e.line, e.column = pos.Line, pos.Column
	}
	if !visit(p, e) {
		return false
	}
	if v.Kind == unstable.InlineTable {
		for it := v.Children(); it.Next(); {
			if n := it.Node(); n.Kind == unstable.KeyValue && !walkKeyValue(p, key, n, visit) {
				return false
			}
		}
	}
	return true
}

// keyParts returns a key's parts and the node of its first.
func keyParts(it unstable.Iterator) ([]string, *unstable.Node) {
	var parts []string
	var first *unstable.Node
	for it.Next() {
		if first == nil {
			first = it.Node()
		}
		parts = append(parts, string(it.Node().Data))
	}
	return parts, first
}

// locate returns where data sets key: the line and column of its value (of the key, for a
// table or an array), or zeros when the document does not set it.
func locate(data []byte, key string) (line, column int) {
	walk(data, func(_ *unstable.Parser, e entry) bool {
		if strings.Join(e.key, ".") == key {
			line, column = e.line, e.column
			return false
		}
		return true
	})
	return line, column
}

// lookup finds the Go type a dotted key decodes into. bad is the index of the first part
// that names nothing (-1 when every part does); holder is the type that lacks it.
func lookup(key []string) (t reflect.Type, bad int, holder reflect.Type) {
	t = configType
	for i, part := range key {
		switch {
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct && t != durationType:
			f, ok := fieldByTag(t, part)
			if !ok {
				return nil, i, t
			}
			t = f.Type
		default:
			return nil, i, t
		}
	}
	return t, -1, nil
}

// fieldByTag finds the field a key decodes into: the one of that TOML name, else, as the
// decoder does, one whose name differs only in case.
func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	var folded reflect.StructField
	found := false
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		switch {
		case tag == "" || tag == "-":
		case tag == name:
			return f, true
		case !found && strings.EqualFold(tag, name):
			folded, found = f, true
		}
	}
	return folded, found
}

// isTable reports whether t is written as a TOML table.
func isTable(t reflect.Type) bool {
	return t != durationType && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map)
}

// check walks data against Config's fields and returns the first key that names no field
// (with the nearest that does) or holds a value of the wrong type, as an *Error naming
// name, the line and the key; nil when it finds neither.
func check(name string, data []byte) *Error {
	var found *Error
	walk(data, func(p *unstable.Parser, e entry) bool {
		found = checkEntry(name, p, e)
		return found == nil
	})
	return found
}

func checkEntry(name string, p *unstable.Parser, e entry) *Error {
	dotted := strings.Join(e.key, ".")
	t, bad, holder := lookup(e.key)
	if bad >= 0 {
		if !isTable(holder) {
			// verify.threads.x = 1, or [verify.threads]: a key under a key that is no table.
			parent := strings.Join(e.key[:bad], ".")
			l, c := locate(p.Data(), parent)
			if l == 0 {
				l, c = e.keyLine, e.keyColumn
			}
			return &Error{File: name, Line: l, Column: c, Key: parent, Msg: fmt.Sprintf("want %s, have a table", want(holder))}
		}
		return &Error{File: name, Line: e.keyLine, Column: e.keyColumn, Key: dotted, Msg: unknownKeyMsg(e.key)}
	}
	if e.header {
		switch {
		case e.arrayTable:
			return &Error{File: name, Line: e.line, Column: e.column, Key: dotted, Msg: fmt.Sprintf("want %s, have an array of tables ([[%s]])", want(t), dotted)}
		case !isTable(t):
			return &Error{File: name, Line: e.line, Column: e.column, Key: dotted, Msg: fmt.Sprintf("want %s, have a table", want(t))}
		}
		return nil
	}
	if msg, line, column := mismatch(p, t, e.value); msg != "" {
		if line == 0 {
			line, column = e.line, e.column
		}
		return &Error{File: name, Line: line, Column: column, Key: dotted, Msg: msg}
	}
	return nil
}

// mismatch says what is wrong when v cannot be a t, with the position of the offending
// node when it has one of its own (an array's element); "" when v fits.
func mismatch(p *unstable.Parser, t reflect.Type, v *unstable.Node) (msg string, line, column int) {
	if fits(t, v) {
		if t.Kind() == reflect.Slice {
			i := 0
			for it := v.Children(); it.Next(); {
				el := it.Node()
				if el.Kind == unstable.Comment {
					continue
				}
				i++
				if !fits(t.Elem(), el) {
					msg = fmt.Sprintf("want %s, but element %d is %s", want(t), i, have(p, el))
					if el.Raw.Length > 0 {
						pos := p.Shape(el.Raw).Start
						line, column = pos.Line, pos.Column
					}
					return msg, line, column
				}
			}
		}
		return "", 0, 0
	}
	return fmt.Sprintf("want %s, have %s", want(t), have(p, v)), 0, 0
}

// fits reports whether v is of the kind t takes (an array's elements are checked apart).
func fits(t reflect.Type, v *unstable.Node) bool {
	switch {
	case t == durationType:
		if v.Kind != unstable.String {
			return false
		}
		_, err := time.ParseDuration(string(v.Data))
		return err == nil
	case isTable(t):
		return v.Kind == unstable.InlineTable
	}
	switch t.Kind() {
	case reflect.String:
		return v.Kind == unstable.String
	case reflect.Int, reflect.Int64, reflect.Int32:
		return v.Kind == unstable.Integer
	case reflect.Bool:
		return v.Kind == unstable.Bool
	case reflect.Slice:
		return v.Kind == unstable.Array
	}
	return true // a field of a kind this file does not describe: the decoder judges it
}

// want says what a key of type t takes, in TOML's words.
func want(t reflect.Type) string {
	if t == durationType {
		return `a duration string such as "90s" or "5m"`
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "an array of " + plural(t.Elem())
	case reflect.Map:
		return "a table of " + plural(t.Elem()) + ` (such as { NAME = "value" })`
	case reflect.Struct:
		return "a table"
	}
	return t.Kind().String()
}

func plural(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "strings"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integers"
	}
	return "values"
}

// maxShown bounds a value quoted in a message: the point is to recognise it.
const maxShown = 60

// have says what v is, quoting a scalar ("the string \"8\""), with any password in a URL
// masked: the message goes to CI logs.
func have(p *unstable.Parser, v *unstable.Node) string {
	raw := ""
	if v.Raw.Length > 0 {
		raw = string(p.Raw(v.Raw))
	}
	switch v.Kind {
	case unstable.String:
		s := maskPassword(string(v.Data))
		if len(s) > maxShown {
			s = s[:maxShown] + "..."
		}
		return "the string " + strconv.Quote(s)
	case unstable.Integer:
		return "the integer " + raw
	case unstable.Float:
		return "the number " + raw
	case unstable.Bool:
		return raw
	case unstable.Array:
		return "an array"
	case unstable.InlineTable:
		return "a table"
	case unstable.LocalDate:
		return "the date " + raw
	case unstable.LocalTime:
		return "the time " + raw
	case unstable.LocalDateTime, unstable.DateTime:
		return "the date and time " + raw
	}
	return "a " + strings.ToLower(v.Kind.String())
}

// maskPassword replaces the password of a URL-like string ("redis://u:pw@host") with
// "xxxxx".
func maskPassword(s string) string {
	scheme := strings.Index(s, "://")
	if scheme < 0 {
		return s
	}
	rest := s[scheme+3:]
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return s
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return s
	}
	return s[:scheme+3] + user + ":xxxxx" + rest[at:]
}
