// Package names is what the server keeps of a name a person typed (a
// student's on a class's roster, a reader's in a room, a class's) and how
// it tells two names apart.
//
// Clean is the name as shown: NFC, without the characters that make a name
// read otherwise than it is written (bidirectional controls, zero-width and
// other format characters, variation selectors, the combining grapheme
// joiner, controls), its white space (no-break spaces included) folded to
// single spaces and trimmed. Two names that still look alike ("Anna" with
// a Cyrillic "А", a fullwidth "Ａnna", "ANNA") have one Skeleton: a small
// form of Unicode TR39's confusable skeleton, enough for the look-alikes
// of Latin letters a roster meets.
package names

import (
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Clean is s as a name is kept and shown (see the package comment). It may
// be "": a name of nothing but invisible characters is no name.
func Clean(s string) string {
	s = strings.ToValidUTF8(s, "")
	var b strings.Builder
	space := false
	for _, r := range norm.NFC.String(s) {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case invisible(r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	// Removing a character can leave one that composes with the next.
	return norm.NFC.String(b.String())
}

// invisible reports whether r is a character a name does without: one
// that shows nothing itself, or changes how the characters around it show.
func invisible(r rune) bool {
	switch {
	case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r): // controls; bidi marks, U+200B–F, U+2060–F, U+061C, U+FEFF…
		return true
	case unicode.Is(unicode.Bidi_Control, r), unicode.Is(unicode.Variation_Selector, r):
		return true
	case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0: // the grapheme joiner, Hangul fillers
		return true
	}
	return false
}

// fold is NFKC (fullwidth and compatibility forms to their plain letters)
// with case folded.
var fold = cases.Fold()

// Skeleton is what s looks like, for telling names apart: two names with
// one skeleton are taken for each other. It is Clean's name, folded to
// NFKC and one case, without accents, each letter that looks like a Latin
// one mapped to it, and the few pairs of letters that read as one ("rn",
// "vv") as that one.
func Skeleton(s string) string {
	s = norm.NFKC.String(fold.String(Clean(s)))
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		if unicode.Is(unicode.Mn, r) {
			continue // accents: "Zoë" and "Zoe" are one name to a reader
		}
		if l, ok := lookalike[r]; ok {
			r = l
		}
		b.WriteRune(r)
	}
	out := b.String()
	for _, p := range digraphs {
		out = strings.ReplaceAll(out, p[0], p[1])
	}
	return out
}

// digraphs are pairs of letters that read as one letter.
var digraphs = [][2]string{{"rn", "m"}, {"vv", "w"}}

// lookalike maps letters (already case-folded) to the Latin letter they
// look like: Cyrillic and Greek look-alikes, dotless i, and the digits and
// letters a name confuses most (0 and o, 1 and l and i).
var lookalike = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'һ': 'h', 'і': 'i', 'ї': 'i', 'ј': 'j', 'к': 'k',
	'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c', 'т': 't', 'у': 'y', 'х': 'x', 'ѕ': 's',
	'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ɡ': 'g', 'ӏ': 'l', 'ү': 'y', 'ѵ': 'v', 'ь': 'b',
	// Greek
	'α': 'a', 'β': 'b', 'ε': 'e', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p',
	'τ': 't', 'υ': 'u', 'χ': 'x', 'γ': 'y', 'ζ': 'z', 'μ': 'u', 'ω': 'w',
	// Latin and digits
	'ı': 'i', 'ȷ': 'j', 'ɑ': 'a', 'ℓ': 'l', '0': 'o', '1': 'l', 'i': 'l', '|': 'l', '5': 's',
}
