package route

import (
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
)

// This file finds literals a rule's text must contain for the rule to
// match, so that most rules are rejected by one substring search instead of
// running a regular expression or an expression. Every function here must
// be sound: when it returns a literal, a text without that literal never
// matches (and an expression without it evaluates to false, not to an
// error).

// requiredLiteral returns the longest literal string that every match of
// the regular expression src contains, and whether it is compared
// case-insensitively (then it is returned in folded form, see foldString).
// It returns "" when it cannot tell.
func requiredLiteral(src string) (string, bool) {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return "", false
	}
	lit, fold := literalOf(re.Simplify())
	if strings.ContainsRune(lit, utf8.RuneError) {
		// U+FFFD in a pattern also matches invalid UTF-8 in the text.
		return "", false
	}
	if fold {
		lit = foldString(lit)
	}
	return lit, fold
}

func literalOf(re *syntax.Regexp) (string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune), re.Flags&syntax.FoldCase != 0
	case syntax.OpCapture, syntax.OpPlus:
		return literalOf(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return literalOf(re.Sub[0])
		}
	case syntax.OpConcat:
		var best string
		var bestFold bool
		for _, sub := range re.Sub {
			if lit, fold := literalOf(sub); utf8.RuneCountInString(lit) > utf8.RuneCountInString(best) {
				best, bestFold = lit, fold
			}
		}
		return best, bestFold
	}
	return "", false
}

// exprLiteral returns a literal the text must contain for the expression
// src to be true, and whether it is compared case-insensitively, for the
// common shapes: `text contains 'lit'`, `text startsWith 'lit'`, `text
// endsWith 'lit'`, `text matches 're'`, and any of them as the left operand
// of && (evaluated first: when it is false, && is false without evaluating
// the right side, so skipping the expression cannot hide an error). It
// returns "" for anything else, including sources with braces.
func exprLiteral(src string) (string, bool) {
	if strings.Contains(src, "{") {
		return "", false
	}
	tree, err := parser.Parse(src)
	if err != nil {
		return "", false
	}
	return exprNodeLiteral(tree.Node)
}

func exprNodeLiteral(n ast.Node) (string, bool) {
	b, ok := n.(*ast.BinaryNode)
	if !ok {
		return "", false
	}
	switch b.Operator {
	case "&&", "and":
		return exprNodeLiteral(b.Left)
	case "contains", "startsWith", "endsWith", "matches":
		id, ok := b.Left.(*ast.IdentifierNode)
		if !ok || id.Value != "text" {
			return "", false
		}
		lit, ok := b.Right.(*ast.StringNode)
		if !ok {
			return "", false
		}
		if b.Operator == "matches" {
			return requiredLiteral(lit.Value)
		}
		return lit.Value, false
	}
	return "", false
}

// foldString maps every rune of s to the smallest rune of its simple case
// folding orbit (the equivalence regexp's (?i) uses), so that two strings
// are equal under (?i) exactly when their folded forms are equal.
func foldString(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		b := []byte(s)
		for i, c := range b {
			if 'a' <= c && c <= 'z' {
				b[i] = c - 'a' + 'A'
			}
		}
		return string(b)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}
