package template_test

import (
	"fmt"

	"github.com/reinhq/rein/flow/template"
)

func ExampleTemplate_Render() {
	t := template.MustParse("Score {extract_info.name} ({extract_info.years} years) {{json}}")
	out, err := t.Render(map[string]any{
		"extract_info": map[string]any{"name": "Ada", "years": 18.0},
	})
	fmt.Println(out, err)
	// Output: Score Ada (18 years) {json} <nil>
}

func ExampleParseValue() {
	v, errs := template.ParseValue(map[string]any{"to": []any{"{user.email}"}, "years": "{user.years}"})
	if errs != nil {
		fmt.Println(errs)
		return
	}
	out, err := v.Render(map[string]any{"user": map[string]any{"email": "ada@example.com", "years": 18.0}})
	fmt.Println(out, err)
	// Output: map[to:[ada@example.com] years:18] <nil>
}
