package provider_test

import (
	"fmt"
	"os"

	"github.com/reinhq/rein/model/provider"
)

func ExampleOpen() {
	spec, err := provider.ParseRef("deepseek/deepseek-chat")
	if err != nil {
		fmt.Println(err)
		return
	}
	// Keys come from the environment only; here DEEPSEEK_API_KEY is unset.
	_, err = provider.Open(spec, func(string) string { return "" })
	fmt.Println(err)

	m, err := provider.Open(provider.Spec{Provider: "ollama", Model: "llama3.2"}, os.Getenv)
	fmt.Printf("%T %v\n", m, err)
	// Output:
	// deepseek/deepseek-chat needs an API key: set the environment variable DEEPSEEK_API_KEY (or name another one with api_key_env)
	// *openai.Model <nil>
}
