// Package house holds the tests of the house rules that no one package owns:
// the sizes of every non-test Go file of the module and how tests wait. It
// has no code of its own; its tests read the module's source.
package house
