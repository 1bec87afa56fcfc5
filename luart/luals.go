package luart

import (
	"fmt"
	"sort"
	"strings"

	"github.com/stoatflow/stoatflow/pipeline/serdes"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// luaDefinitions renders the LuaLS definition files (`---@meta`) of the stoat and
// stoat.test modules from dslTypes, dslRecords, dslAliases and the option sets: file
// name (as require finds it) → contents. scripts/types/ holds them, and .luarc.json points
// VS Code and Neovim at that directory.
func luaDefinitions() map[string]string {
	return map[string]string{
		"stoat.lua":      renderModule("stoat"),
		"stoat/test.lua": renderModule("stoat.test"),
	}
}

func renderModule(module string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---@meta %s\n", module)
	fmt.Fprintf(&b, "-- LuaLS definitions of the %s module, for completion and checks in VS Code and Neovim.\n", module)
	b.WriteString("-- Generated from the tables that build the DSL (luart/dsl_types.go, luart/dsl_options.go)\n")
	b.WriteString("-- by `go test ./luart -run TestLuaDefinitions -update`; do not edit.\n")
	if module == "stoat" {
		b.WriteString("\n")
		names := append(serdes.Names(), schemas.Names...)
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = fmt.Sprintf("%q", n)
		}
		fmt.Fprintf(&b, "---@alias stoat.SerdeName %s\n", strings.Join(quoted, "|"))
		for _, a := range dslAliases {
			fmt.Fprintf(&b, "---@alias %s %s\n", a[0], a[1])
		}
	}
	for _, r := range dslRecords {
		if r.module != module {
			continue
		}
		b.WriteString("\n")
		if r.parent != "" {
			fmt.Fprintf(&b, "---@class %s: %s\n", r.class, r.parent)
		} else {
			fmt.Fprintf(&b, "---@class %s\n", r.class)
		}
		for _, f := range r.fields {
			fmt.Fprintf(&b, "---@field %s %s\n", f[0], f[1])
		}
	}
	sets := make([]*optionSet, 0, len(optionSets))
	for _, s := range optionSets {
		if moduleOf(s.class) == module {
			sets = append(sets, s)
		}
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].class < sets[j].class })
	for _, s := range sets {
		fmt.Fprintf(&b, "\n---@class %s\n", s.class)
		for _, f := range s.fields {
			optional := "?"
			if f.required {
				optional = ""
			}
			fmt.Fprintf(&b, "---@field %s%s %s\n", f.name, optional, f.typ)
		}
	}
	var self *dslType
	for i := range dslTypes {
		t := &dslTypes[i]
		switch {
		case t.module != module:
		case t.name == module:
			self = t
		default:
			b.WriteString("\n")
			writeClass(&b, t)
		}
	}
	if self != nil {
		b.WriteString("\n")
		writeClass(&b, self)
		fmt.Fprintf(&b, "local M = {}\nreturn M\n")
	}
	return b.String()
}

// moduleOf is the module a LuaLS class belongs to: stoat.test.X to stoat.test, the rest to
// stoat.
func moduleOf(class string) string {
	if strings.HasPrefix(class, "stoat.test.") {
		return "stoat.test"
	}
	return "stoat"
}

func writeClass(b *strings.Builder, t *dslType) {
	fmt.Fprintf(b, "---@class %s\n", t.class)
	for _, f := range t.fields {
		if f.value != "" {
			fmt.Fprintf(b, "---@field %s %s\n", f.name, f.value)
			continue
		}
		funs := make([]string, len(f.sigs))
		for i, sig := range f.sigs {
			funs[i] = "fun" + sig
			if t.object {
				self := "self: " + t.class
				if strings.HasPrefix(sig, "()") {
					funs[i] = "fun(" + self + sig[1:]
				} else {
					funs[i] = "fun(" + self + ", " + sig[1:]
				}
			}
		}
		typ := funs[0]
		if len(funs) > 1 {
			typ = "(" + strings.Join(funs, ")|(") + ")"
		}
		fmt.Fprintf(b, "---@field %s %s\n", f.name, typ)
	}
}

// methodNames are the names a type of the spec declares, sorted.
func (t *dslType) methodNames() []string {
	out := make([]string, len(t.fields))
	for i, f := range t.fields {
		out[i] = f.name
	}
	sort.Strings(out)
	return out
}
