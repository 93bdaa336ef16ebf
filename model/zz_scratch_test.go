package model_test

import (
	"fmt"
	"testing"

	"github.com/reinhq/rein/model"
)

type Inner struct{ X int `json:"x"` }
type Ex struct {
	Route  string   `json:"route"`
	Reason string   `json:"reason,omitempty"`
	Tags   []string `json:"tags"`
	In     Inner    `json:"in"`
	P      *Inner   `json:"p,omitempty"`
	M      map[string]any `json:"m,omitempty"`
	Any    any      `json:"any,omitempty"`

}

func TestScratch(t *testing.T) {
	s, err := model.SchemaFor[Ex]()
	fmt.Println(string(s.JSON()), err)
	s2, err := model.SchemaFor[[]Inner]()
	fmt.Println(string(s2.JSON()), err)
	s3, err := model.SchemaFor[int]()
	fmt.Println(string(s3.JSON()), err)
	s4, err := model.SchemaFor[map[string]int]()
	fmt.Println(string(s4.JSON()), err)
	s5, err := model.SchemaFor[*Inner]()
	if s5 != nil {fmt.Println(string(s5.JSON()), err)} else {fmt.Println(err)}
}
