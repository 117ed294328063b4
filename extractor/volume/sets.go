package volume

// sets.go reads the two sets: the DesiredStateOfWorld and
// ActualStateOfWorld interfaces of pkg/kubelet/volumemanager/cache, the
// interfaces they embed (operationexecutor's ActualStateOfWorldMounterUpdater
// and ActualStateOfWorldAttacherUpdater), the type their constructor
// returns, and which of their methods mutate it.
//
// The rule for "mutating": a method of the implementation that assigns to
// the receiver's fields (recv.f = …, recv.m[k] = …, recv.f.g++), to a local
// variable read out of them (v := recv.m[k]; v.pods[p] = …), deletes from
// them (delete(recv.m, k)), or calls a method of the receiver that does.
// Names are not trusted: CheckAndMarkVolumeAsUncertainViaReconstruction
// mutates, and a Mark… that only reads would not.

import (
	"fmt"
	"go/ast"
	"go/token"
	"sort"
)

const cacheDir = "pkg/kubelet/volumemanager/cache"

var setNames = []string{"DesiredStateOfWorld", "ActualStateOfWorld"}

// setInfo is a set as the derivation uses it.
type setInfo struct {
	Set
	iface    string          // qualified interface type
	impl     string          // qualified implementation type
	methods  map[string]bool // method set of the interface, embedded included
	mutating map[string]bool
	// types the set is reached through: the interface, the interfaces it
	// embeds, the implementation, each with its own method set.
	through map[string]map[string]bool
}

func (t *tree) readSets() ([]*setInfo, error) {
	pk := t.pkgs[cacheDir]
	if pk == nil {
		return nil, fmt.Errorf("no %s in the tree", cacheDir)
	}
	var out []*setInfo
	for _, name := range setNames {
		id := pk.ifaces[name]
		if id == nil {
			return nil, fmt.Errorf("no interface %s in %s", name, cacheDir)
		}
		s := &setInfo{iface: cacheDir + "." + name, through: map[string]map[string]bool{}}
		s.Name, s.File, s.Line = name, id.file.path, id.line
		s.Upstream = upstream(t.tag, s.File, s.Line, 0)
		s.methods = t.ifaceMethods(s.iface, s.through, 0)
		for q := range s.through {
			if q != s.iface {
				s.Embeds = append(s.Embeds, short(q))
			}
		}
		sort.Strings(s.Embeds)
		s.impl = t.constructed(pk, name)
		if s.impl == "" {
			return nil, fmt.Errorf("cannot tell what New%s in %s returns", name, cacheDir)
		}
		_, s.Impl = splitType(s.impl)
		impl := map[string]bool{}
		for m := range pk.methods[s.Impl] {
			impl[m] = true
		}
		s.through[s.impl] = impl
		s.mutating = t.mutatingMethods(pk, s.Impl)
		for m := range s.methods {
			s.Methods = append(s.Methods, m)
			if s.mutating[m] {
				s.Mutating = append(s.Mutating, m)
			}
		}
		sort.Strings(s.Methods)
		sort.Strings(s.Mutating)
		out = append(out, s)
	}
	return out, nil
}

// ifaceMethods is the method set of interface q, embedded interfaces
// included; every interface visited is recorded in through with its own
// method set.
func (t *tree) ifaceMethods(q string, through map[string]map[string]bool, depth int) map[string]bool {
	set := map[string]bool{}
	dir, name := splitType(q)
	pk := t.pkgs[dir]
	if pk == nil || depth > 4 || pk.ifaces[name] == nil {
		return set
	}
	id := pk.ifaces[name]
	for _, m := range id.typ.Methods.List {
		if len(m.Names) > 0 {
			for _, n := range m.Names {
				set[n.Name] = true
			}
			continue
		}
		if emb := id.file.typeName(m.Type); emb != "" {
			for n := range t.ifaceMethods(emb, through, depth+1) {
				set[n] = true
			}
		}
	}
	through[q] = set
	return set
}

// constructed is the type New<name> in pk returns a pointer to.
func (t *tree) constructed(pk *pkg, name string) string {
	fd := pk.funcs["New"+name]
	if fd == nil {
		return ""
	}
	impl := ""
	ast.Inspect(fd.decl.Body, func(n ast.Node) bool {
		rs, ok := n.(*ast.ReturnStmt)
		if !ok || len(rs.Results) != 1 || impl != "" {
			return impl == ""
		}
		e := rs.Results[0]
		if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
			e = u.X
		}
		if cl, ok := e.(*ast.CompositeLit); ok {
			impl = fd.file.typeName(cl.Type)
		}
		return false
	})
	return impl
}

// mutatingMethods are the methods of impl in pk that mutate the receiver,
// to a fixed point over the methods they call on it.
func (t *tree) mutatingMethods(pk *pkg, impl string) map[string]bool {
	methods := pk.methods[impl]
	mut := map[string]bool{}
	calls := map[string][]string{}
	for name, fd := range methods {
		recv := recvName(fd.decl)
		if fd.decl.Body == nil || recv == "" {
			continue
		}
		if assignsRecv(fd.decl.Body, recv) {
			mut[name] = true
		}
		calls[name] = recvCalls(fd.decl.Body, recv)
	}
	for changed := true; changed; {
		changed = false
		for name, cs := range calls {
			if mut[name] {
				continue
			}
			for _, c := range cs {
				if mut[c] && methods[c] != nil {
					mut[name], changed = true, true
					break
				}
			}
		}
	}
	return mut
}

// assignsRecv says whether body writes through recv: an assignment or
// ++/-- whose target is rooted at recv or at a local read out of recv, or
// a delete from a map rooted at either.
func assignsRecv(body *ast.BlockStmt, recv string) bool {
	aliases := map[string]bool{recv: true}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if found {
			return false
		}
		switch s := n.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE || (s.Tok == token.ASSIGN && allIdents(s.Lhs)) {
				for i, l := range s.Lhs {
					if id, ok := l.(*ast.Ident); ok && i < len(s.Rhs) && len(s.Lhs) == len(s.Rhs) && rootedAt(s.Rhs[i], aliases) && id.Name != "_" {
						aliases[id.Name] = true
					} else if ok && len(s.Rhs) == 1 && rootedAt(s.Rhs[0], aliases) && id.Name != "_" {
						aliases[id.Name] = true // v, ok := recv.m[k]
					}
				}
				return true
			}
			for _, l := range s.Lhs {
				if _, isIdent := l.(*ast.Ident); !isIdent && rootedAt(l, aliases) {
					found = true
				}
			}
		case *ast.RangeStmt:
			if rootedAt(s.X, aliases) {
				for _, e := range []ast.Expr{s.Key, s.Value} {
					if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
						aliases[id.Name] = true
					}
				}
			}
		case *ast.IncDecStmt:
			if _, isIdent := s.X.(*ast.Ident); !isIdent && rootedAt(s.X, aliases) {
				found = true
			}
		case *ast.CallExpr:
			if isIdent(s.Fun, "delete") && len(s.Args) == 2 && rootedAt(s.Args[0], aliases) {
				found = true
			}
			// recv.f.Insert(k): a container's own mutator, on a field.
			if sel, ok := s.Fun.(*ast.SelectorExpr); ok && containerMutators[sel.Sel.Name] && rootedAt(sel.X, aliases) {
				found = true
			}
		}
		return true
	})
	return found
}

// containerMutators are the methods by which the containers the sets keep
// in their fields (apimachinery's sets.Set, sync.Map, a list) are changed:
// their code is outside the module, so they are known by name.
var containerMutators = map[string]bool{
	"Insert": true, "Delete": true, "Clear": true, "Store": true, "LoadOrStore": true,
	"PushBack": true, "PushFront": true, "Remove": true,
}

func allIdents(es []ast.Expr) bool {
	for _, e := range es {
		if _, ok := e.(*ast.Ident); !ok {
			return false
		}
	}
	return true
}

// rootedAt says whether e is a selector/index/star chain whose root is one
// of names (a bare name counts only through a selector or index).
func rootedAt(e ast.Expr, names map[string]bool) bool {
	depth := 0
	for {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return depth > 0 && names[x.Name]
		default:
			return false
		}
		depth++
	}
}
