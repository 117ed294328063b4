package index

// interfaces.go is the part of the index that tells a call through an interface where it may go: an interface's methods
// and the module's concrete types that implement it.

import (
	"bytes"
	"go/ast"
	"slices"
	"strings"
)

// isInterface reports whether t is declared as an interface, and its
// methods' names (embedded interfaces of the module included).
func (x *Index) InterfaceMethods(t Named, depth int) ([]string, bool) {
	specs := x.TypeSpecsOf(t)
	if len(specs) == 0 || depth > 6 {
		return nil, false
	}
	it, ok := specs[0].TS.Type.(*ast.InterfaceType)
	if !ok {
		return nil, false
	}
	var names []string
	for _, m := range it.Methods.List {
		if len(m.Names) == 0 {
			if emb := x.ResolveType(m.Type, specs[0].F, t.Dir); emb.OK() {
				ms, _ := x.InterfaceMethods(emb, depth+1)
				names = append(names, ms...)
			}
			continue
		}
		for _, n := range m.Names {
			names = append(names, n.Name)
		}
	}
	return names, true
}

// implementations are the module's concrete types (in the interface's
// package and in FlowScope) that declare every method of interface t, test
// doubles left out, in a stable order.
func (x *Index) Implementations(t Named) []Named {
	key := t.Dir + "." + t.Name
	if impls, ok := x.impls[key]; ok {
		return impls
	}
	ms, ok := x.InterfaceMethods(t, 0)
	if !ok || len(ms) == 0 {
		x.impls[key] = nil
		return nil
	}
	dirs := append([]string{t.Dir}, x.ScopeDirs()...)
	seen := map[Named]bool{}
	var out []Named
	marker := ") " + ms[0] + "("
	for _, d := range dirs {
		if IsTestDouble(d) {
			continue
		}
		for _, c := range x.FuncsIn(d, marker) {
			r := RecvName(c.Decl)
			n := Named{d, r}
			if r == "" || c.Decl.Name.Name != ms[0] || seen[n] || IsTestDoubleType(r) {
				continue
			}
			seen[n] = true
			if (d == t.Dir || x.Imports(d, t.Dir)) && x.HasMethods(n, ms[1:]) && x.SameArity(t, n, ms) {
				out = append(out, n)
			}
		}
	}
	slices.SortFunc(out, func(a, b Named) int { return strings.Compare(a.Dir+"."+a.Name, b.Dir+"."+b.Name) })
	x.impls[key] = out
	return out
}

// imports reports whether a file of package dir imports package of. An
// implementation is taken to know its interface: in its package, or in one
// that imports the interface's. Without this, every type with a Run(ctx)
// would implement every one-method interface named Run.
func (x *Index) Imports(dir, of string) bool {
	p := x.Pkg(dir)
	if p == nil {
		return false
	}
	q := []byte(`"` + modulePrefix + of + `"`)
	for _, f := range p.files {
		if bytes.Contains(f.Src, q) {
			return true
		}
	}
	return false
}

// sameArity reports whether impl's methods take and return as many values
// as interface t's (names alone let a type with a Start and a GetCapacity
// of its own pass for an implementation).
func (x *Index) SameArity(t, impl Named, ms []string) bool {
	specs := x.TypeSpecsOf(t)
	if len(specs) == 0 {
		return false
	}
	it := specs[0].TS.Type.(*ast.InterfaceType)
	for _, m := range it.Methods.List {
		ft, ok := m.Type.(*ast.FuncType)
		if !ok || len(m.Names) == 0 {
			continue
		}
		for _, d := range x.Methods(impl, m.Names[0].Name) {
			if NumParams(d.Decl.Type) != NumParams(ft) || NumResults(d.Decl.Type) != NumResults(ft) {
				return false
			}
		}
	}
	return true
}

func NumResults(ft *ast.FuncType) int {
	if ft.Results == nil {
		return 0
	}
	n := 0
	for _, p := range ft.Results.List {
		n += max(1, len(p.Names))
	}
	return n
}

// hasMethods reports whether t declares every method in ms, directly or
// through an embedded field of a module type.
func (x *Index) HasMethods(t Named, ms []string) bool {
	for _, m := range ms {
		if len(x.Methods(t, m)) > 0 {
			continue
		}
		if !x.EmbedsMethod(t, m, 0) {
			return false
		}
	}
	return true
}

func (x *Index) EmbedsMethod(t Named, m string, depth int) bool {
	if depth > 4 {
		return false
	}
	for _, sp := range x.TypeSpecsOf(t) {
		st, ok := sp.TS.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, fl := range st.Fields.List {
			if len(fl.Names) > 0 {
				continue
			}
			e := x.ResolveType(fl.Type, sp.F, t.Dir)
			if !e.OK() {
				return true // embeds a type we cannot read: give it the benefit
			}
			if len(x.Methods(e, m)) > 0 || x.EmbedsMethod(e, m, depth+1) {
				return true
			}
			if ims, ok := x.InterfaceMethods(e, 0); ok && slices.Contains(ims, m) {
				return true
			}
		}
	}
	return false
}
