// Package provider turns model configuration into Models. A Spec is one
// rein.yaml `models:` entry:
//
//	models:
//	  default:   {provider: openai, model: gpt-4o-mini}
//	  reasoner:  {provider: deepseek, model: deepseek-chat, max_tokens: 2048}
//	  local:     {provider: ollama, model: llama3.2, timeout: 2m}
//	  claude:    {provider: anthropic, model: claude-sonnet-4-5}
//	  gateway:   {provider: openai, model: gpt-4o-mini, base_url: https://llm.example.com/v1, api_key_env: GATEWAY_KEY}
//
// and ParseRef reads the `provider/model` form of `--model` and of a
// step's `model:`. Open builds the Model with the adapter registered for
// the preset's wire API: model/openai for openai, deepseek, ollama, vllm
// and lmstudio, model/anthropic for anthropic. Each adapter registers
// itself (Register) when its package is imported, so this package links
// no provider SDK; a program imports the adapters it uses, and Open's
// error for a missing one names the import:
//
//	import _ "github.com/reinhq/rein/model/openai"
//
// Presets give each provider name its base URL, key variable and
// structured-output mode:
//
//	provider   base URL                    key variable        structured
//	openai     https://api.openai.com/v1   OPENAI_API_KEY      json_schema
//	anthropic  https://api.anthropic.com   ANTHROPIC_API_KEY   tool use
//	deepseek   https://api.deepseek.com    DEEPSEEK_API_KEY    json_object
//	ollama     http://localhost:11434/v1   (none)              json_schema
//	vllm       http://localhost:8000/v1    VLLM_API_KEY, opt.  json_schema
//	lmstudio   http://localhost:1234/v1    (none)              json_schema
//
// OPENAI_BASE_URL and ANTHROPIC_BASE_URL, when set, are the base URL of an
// openai or anthropic spec without base_url (a compatible server, a
// proxy), as in the providers' own SDKs; base_url in rein.yaml wins.
//
// openai with a base_url of another server defaults to json_object (JSON
// mode), since not every compatible server has strict structured outputs.
//
// API keys are only ever read from the environment, through the getenv
// function Open is given, from the variable the spec or preset names; a
// Spec has no field for a key, so none is written to a config file, a
// trace or a log.
package provider
