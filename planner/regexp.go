package planner

import (
	"encoding/binary"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/quarrysearch/quarry/api"
)

// A regexp or wildcard query is run on every shard as a deterministic
// automaton over the term dictionary (bleve through vellum), built before
// the search starts and without a look at the deadline: a pattern whose
// automaton has thousands of states ("(a|b)*a(a|b){12}", ".*x.{10}", a
// repeat count in the thousands) takes a searcher's core for most of a
// second, twice (statistics and search), on every shard, long after the
// caller's deadline gave up. Such patterns are refused before any shard
// is asked: checkPattern counts the states of the pattern's automaton
// (over runes: vellum's, over bytes, has more) and stops counting past
// maxPatternStates.

// maxPatternInsts caps a pattern's compiled program (Go's regexp/syntax):
// "x{1000}" is 1002 instructions.
const maxPatternInsts = 512

// maxPatternStates caps the states of a pattern's automaton; vellum gives
// up at 10,000 byte-level states, after about a second.
const maxPatternStates = 128

// wildcardToRegexp is bleve's translation of a wildcard ("*" any run,
// "?" any one character) into the regexp it runs.
var wildcardToRegexp = strings.NewReplacer("+", `\+`, "(", `\(`, ")", `\)`, "^", `\^`, "$", `\$`, ".", `\.`, "{", `\{`,
	"}", `\}`, "[", `\[`, "]", `\]`, `|`, `\|`, `\`, `\\`, "*", ".*", "?", ".")

// checkPattern refuses a regexp (a wildcard's: wildcard is true) whose
// automaton would cost a shard too much to build.
func checkPattern(pattern string, wildcard bool) error {
	kind, expr := "regexp", pattern
	if wildcard {
		kind, expr = "wildcard", wildcardToRegexp.Replace(pattern)
	}
	re, err := syntax.Parse(strings.TrimPrefix(expr, "^"), syntax.Perl)
	if err != nil {
		return api.BadRequest("query: %s %q: %v", kind, clip(pattern), err)
	}
	if why := unsupported(re); why != "" {
		// The shards' automaton (vellum) refuses these.
		return api.BadRequest("query: %s %q: %s", kind, clip(pattern), why)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return api.BadRequest("query: %s %q: %v", kind, clip(pattern), err)
	}
	if n := len(prog.Inst); n > maxPatternInsts {
		return api.Errorf(api.CodeQueryTooComplex, "query too complex: the %s %q compiles to %d instructions, over the limit of %d; use smaller repeat counts",
			kind, clip(pattern), n, maxPatternInsts)
	}
	if states := automatonStates(prog, maxPatternStates); states > maxPatternStates {
		return api.Errorf(api.CodeQueryTooComplex, "query too complex: the %s %q needs an automaton of more than %d states; "+
			"a counted or optional part after a leading wildcard (.* or *) multiplies them", kind, clip(pattern), maxPatternStates)
	}
	return nil
}

// unsupported says what of a regexp the term automaton cannot run, or "".
func unsupported(re *syntax.Regexp) string {
	if re.Flags&syntax.NonGreedy != 0 {
		return "lazy quantifiers (*?, +?, ??, (?U)) are not supported"
	}
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return "anchors (^, $) are not supported: a regexp matches whole terms"
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return `word boundaries (\b, \B) are not supported`
	}
	for _, sub := range re.Sub {
		if why := unsupported(sub); why != "" {
			return why
		}
	}
	return ""
}

func clip(s string) string {
	if len(s) > 60 {
		for i := 60; i > 0; i-- {
			if utf8.RuneStart(s[i]) {
				return s[:i] + "…"
			}
		}
	}
	return s
}

// automatonStates counts the states of the deterministic automaton of
// prog, over runes (subset construction), stopping at limit+1.
func automatonStates(prog *syntax.Prog, limit int) int {
	// The alphabet, cut where any instruction's rune ranges start or
	// end: one representative rune per piece.
	cuts := []rune{0}
	for _, in := range prog.Inst {
		switch in.Op {
		case syntax.InstRune, syntax.InstRune1:
			runes := in.Rune
			if in.Op == syntax.InstRune && len(runes) == 1 || syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
				runes = foldRanges(runes, in.Op == syntax.InstRune && len(runes) != 1)
			}
			if in.Op == syntax.InstRune1 {
				runes = []rune{in.Rune[0], in.Rune[0]}
			}
			for i := 0; i+1 < len(runes); i += 2 {
				cuts = append(cuts, runes[i], runes[i+1]+1)
			}
		case syntax.InstRuneAnyNotNL:
			cuts = append(cuts, '\n', '\n'+1)
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)

	var (
		seen  = map[string]bool{}
		queue [][]uint32
		buf   []uint32
		stack []uint32
		on    = make([]bool, len(prog.Inst))
		key   []byte
	)
	closure := func(starts []uint32) []uint32 {
		var set []uint32
		stack = append(stack[:0], starts...)
		for len(stack) > 0 {
			pc := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if on[pc] {
				continue
			}
			on[pc] = true
			switch in := &prog.Inst[pc]; in.Op {
			case syntax.InstAlt, syntax.InstAltMatch:
				stack = append(stack, in.Out, in.Arg)
			case syntax.InstCapture, syntax.InstNop, syntax.InstEmptyWidth:
				stack = append(stack, in.Out)
			case syntax.InstFail:
			default: // runes and match: the state's members
				set = append(set, pc)
			}
		}
		clear(on)
		slices.Sort(set)
		return set
	}
	keyOf := func(set []uint32) []byte {
		key = key[:0]
		for _, pc := range set {
			key = binary.AppendUvarint(key, uint64(pc))
		}
		return key
	}
	start := closure([]uint32{uint32(prog.Start)})
	seen[string(keyOf(start))] = true
	queue = append(queue, start)
	for len(queue) > 0 {
		set := queue[0]
		queue = queue[1:]
		for _, r := range cuts {
			buf = buf[:0]
			for _, pc := range set {
				in := &prog.Inst[pc]
				if in.Op != syntax.InstMatch && in.MatchRune(r) {
					buf = append(buf, in.Out)
				}
			}
			if len(buf) == 0 {
				continue
			}
			next := closure(buf)
			if k := keyOf(next); !seen[string(k)] {
				seen[string(k)] = true
				if len(seen) > limit {
					return len(seen)
				}
				queue = append(queue, next)
			}
		}
	}
	return len(seen)
}

// foldRanges returns the rune ranges of a case-folded instruction with
// every case of each rune, so the alphabet is cut at all of them.
func foldRanges(runes []rune, ranges bool) []rune {
	if !ranges {
		r := runes[0]
		out := []rune{r, r}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			out = append(out, f, f)
		}
		return out
	}
	out := slices.Clone(runes)
	for i := 0; i+1 < len(runes) && len(out) < 4096; i += 2 {
		for r := runes[i]; r <= runes[i+1] && len(out) < 4096; r++ {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				out = append(out, f, f)
			}
		}
	}
	return out
}
