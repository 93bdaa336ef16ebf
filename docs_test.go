package rein_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// mdLink matches an inline markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksResolve checks every relative link of README.md, docs/*.md and
// the examples' READMEs: the file or folder it names is in the repository,
// and a #fragment into a markdown file names one of its headings.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	files := []string{"README.md"}
	for _, glob := range []string{"docs/*.md", "examples/*/README.md"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	anchors := map[string]map[string]bool{}
	checked := 0
	for _, file := range files {
		for _, l := range links(t, file) {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			checked++
			path, frag, _ := strings.Cut(l.target, "#")
			target := file
			if path != "" {
				target = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s:%d: link to %s: %s is not in the repository", file, l.line, l.target, target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if anchors[target] == nil {
				anchors[target] = headingAnchors(t, target)
			}
			if !anchors[target][frag] {
				t.Errorf("%s:%d: link to %s: %s has no heading #%s", file, l.line, l.target, target, frag)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d relative links found in %v: is the link pattern right?", checked, files)
	}
}

type mdLinkAt struct {
	target string
	line   int
}

// links returns the links of a markdown file outside fenced code blocks
// and code spans.
func links(t *testing.T, file string) []mdLinkAt {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []mdLinkAt
	sc := bufio.NewScanner(f)
	fenced := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(withoutCodeSpans(line), -1) {
			out = append(out, mdLinkAt{target: m[1], line: n})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// withoutCodeSpans blanks `code spans`, which hold no links.
func withoutCodeSpans(line string) string {
	parts := strings.Split(line, "`")
	for i := 1; i < len(parts); i += 2 {
		parts[i] = ""
	}
	return strings.Join(parts, "``")
}

// headingAnchors returns the anchors GitHub gives the headings of a
// markdown file: lower case, punctuation dropped, spaces as hyphens, a
// repeated anchor numbered -1, -2, ….
func headingAnchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var slug strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				slug.WriteRune(r)
			case r == ' ':
				slug.WriteRune('-')
			}
		}
		a := slug.String()
		for i := 1; out[a]; i++ {
			a = slug.String() + "-" + string(rune('0'+i))
		}
		out[a] = true
	}
	return out
}
