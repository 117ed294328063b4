package names

import "testing"

func TestClean(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Ann", "Ann"},
		{"  Ann   Lee  ", "Ann Lee"},
		{"Ann\u00a0", "Ann"},              // a trailing no-break space
		{"Ann\u00a0\u00a0Lee", "Ann Lee"}, // no-break spaces inside
		{"An\u200bn", "Ann"},              // zero-width space
		{"Ann\u200f", "Ann"},              // right-to-left mark
		{"\u200eAnn", "Ann"},              // left-to-right mark
		{"Ann\u061c", "Ann"},              // Arabic letter mark
		{"Bob\u202e)uoy(", "Bob)uoy("},    // a right-to-left override
		{"\u2066Bob\u2069", "Bob"},        // isolates
		{"Sam\ufe0f", "Sam"},              // a variation selector
		{"Sa\u034fm", "Sam"},              // the combining grapheme joiner
		{"Sam\u2060", "Sam"},              // word joiner
		{"\ufeffSam", "Sam"},              // a byte-order mark
		{"Sam\t\nLee", "Sam Lee"},
		{"Zoe\u0308", "Zoë"}, // decomposed: NFC
		{"Z\u200boe\u0308", "Zoë"},
		{"\u200b\u200f", ""},
		{"bad\xffutf8", "badutf8"},
	} {
		if got := Clean(c.in); got != c.want {
			t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSkeleton(t *testing.T) {
	same := [][]string{
		{"Anna", "\u0410nna", "ＡＮＮＡ", "anna", "Anna\ufe0f", "An\u034fna", "Anna\u00a0", "Αnna"}, // Cyrillic А, fullwidth, case, VS16, CGJ, NBSP, Greek Α
		{"Sam", "Ѕаm", "SAM", "Sa\u200bm"},
		{"Pepe", "Рере", "pepe"},
		{"Bob", "B0b", "Βοb"},
		{"Zoë", "Zoe", "Zoe\u0308"},
		{"Emma", "Ernma"},
		{"Will", "VVill", "Wi11"},
		{"Ilya", "lIya", "1lya"},
	}
	for _, group := range same {
		want := Skeleton(group[0])
		for _, n := range group[1:] {
			if got := Skeleton(n); got != want {
				t.Errorf("Skeleton(%q) = %q, Skeleton(%q) = %q: want one", n, got, group[0], want)
			}
		}
	}
	differ := [][2]string{{"Ann", "Anna"}, {"Sam", "Pam"}, {"Bob", "Rob"}, {"Ann Lee", "Ann"}, {"Дима", "Dima"}, {"Kim", "Tim"}}
	for _, p := range differ {
		if Skeleton(p[0]) == Skeleton(p[1]) {
			t.Errorf("%q and %q: one skeleton %q, want two", p[0], p[1], Skeleton(p[0]))
		}
	}
}
