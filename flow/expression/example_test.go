package expression_test

import (
	"errors"
	"fmt"

	"github.com/reinhq/rein/flow/expression"
)

func ExampleCompile() {
	p, err := expression.Compile("{score_candidate.score} > 60")
	if err != nil {
		fmt.Println(err)
		return
	}
	ok, err := p.Eval(map[string]any{"score_candidate": map[string]any{"score": 72.0}})
	fmt.Println(p.Refs(), ok, err)
	// Output: [score_candidate.score] true <nil>
}

func ExampleCompile_forbidden() {
	_, err := expression.Compile(`__import__("os").system("x")`)
	var e *expression.Error
	errors.As(err, &e)
	fmt.Println(e.Offset, e.Msg[:34])
	// Output: 0 function __import__ is not allowed
}
