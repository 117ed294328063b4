package volume

// gate.go reads feature gates' defaults out of pkg/features at the tag.
// Two shapes have been used: a map of featuregate.FeatureSpec
// (defaultKubernetesFeatureGates: {Default: true, PreRelease:
// featuregate.Beta}), and, from v1.31 on, a map of
// featuregate.VersionedSpecs (defaultVersionedKubernetesFeatureGates: a
// list of {Version: version.MustParse("1.27"), Default: …}, one per stage),
// of which the last whose version is not after the tag's minor applies.
// Any package-level map literal of either value type is read.

import (
	"go/ast"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
)

const featuresDir = "pkg/features"

type gateSpec struct {
	found      bool
	def        bool
	preRelease string
	file       string
	line       int
}

// gateTable holds every gate's specs as written: the unversioned spec, and
// the versioned ones in order.
type gateTable struct {
	plain     map[string]gateSpec
	versioned map[string][]versionedSpec
}

type versionedSpec struct {
	version string // "v1.27"
	spec    gateSpec
}

func (t *tree) readGates() gateTable {
	g := gateTable{plain: map[string]gateSpec{}, versioned: map[string][]versionedSpec{}}
	pk := t.pkgs[featuresDir]
	if pk == nil {
		return g
	}
	for _, f := range pk.files {
		for _, d := range f.ast.Decls {
			ast.Inspect(d, func(n ast.Node) bool {
				cl, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				mt, ok := cl.Type.(*ast.MapType)
				if !ok {
					return true
				}
				switch f.text(t, mt.Value) {
				case "featuregate.FeatureSpec":
					g.readPlain(t, f, cl)
				case "featuregate.VersionedSpecs":
					g.readVersioned(t, f, cl)
				}
				return false
			})
		}
	}
	return g
}

func (g gateTable) readPlain(t *tree, f *file, cl *ast.CompositeLit) {
	for _, el := range cl.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		spec, ok := kv.Value.(*ast.CompositeLit)
		if key := gateKey(kv.Key); ok && key != "" {
			g.plain[key] = specOf(t, f, spec)
		}
	}
}

func (g gateTable) readVersioned(t *tree, f *file, cl *ast.CompositeLit) {
	for _, el := range cl.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		list, ok := kv.Value.(*ast.CompositeLit)
		key := gateKey(kv.Key)
		if !ok || key == "" {
			continue
		}
		for _, e := range list.Elts {
			spec, ok := e.(*ast.CompositeLit)
			if !ok {
				continue
			}
			s := specOf(t, f, spec)
			g.versioned[key] = append(g.versioned[key], versionedSpec{version: specVersion(spec), spec: s})
		}
	}
}

// gateKey is the feature a map key names: features.X or X.
func gateKey(e ast.Expr) string {
	switch k := e.(type) {
	case *ast.Ident:
		return k.Name
	case *ast.SelectorExpr:
		return k.Sel.Name
	}
	return ""
}

// specOf reads a FeatureSpec literal's Default and PreRelease.
func specOf(t *tree, f *file, cl *ast.CompositeLit) gateSpec {
	s := gateSpec{found: true, file: f.path, line: t.line(cl.Pos())}
	for _, el := range cl.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		switch gateKey(kv.Key) {
		case "Default":
			s.def = isIdent(kv.Value, "true")
		case "PreRelease":
			s.preRelease = gateKey(kv.Value)
		}
	}
	return s
}

// specVersion is "v1.27" for Version: version.MustParse("1.27").
func specVersion(cl *ast.CompositeLit) string {
	for _, el := range cl.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok || gateKey(kv.Key) != "Version" {
			continue
		}
		if call, ok := kv.Value.(*ast.CallExpr); ok && len(call.Args) == 1 {
			if lit, ok := call.Args[0].(*ast.BasicLit); ok {
				if v, err := strconv.Unquote(lit.Value); err == nil {
					return "v" + strings.TrimPrefix(v, "v")
				}
			}
		}
	}
	return ""
}

// lookup is the gate's spec at tag: the last versioned spec not after the
// tag's minor, else the unversioned spec.
func (g gateTable) lookup(gate, tag string) gateSpec {
	if specs := g.versioned[gate]; len(specs) > 0 {
		minor := semver.MajorMinor(tag)
		var best gateSpec
		for _, s := range specs {
			if minor == "" || semver.Compare(s.version, minor) <= 0 {
				best = s.spec
			}
		}
		if best.found {
			return best
		}
	}
	return g.plain[gate]
}
