package graph_test

import (
	"fmt"
	"os"

	"github.com/reinhq/rein/flow"
	"github.com/reinhq/rein/graph"
	"github.com/reinhq/rein/tool"
)

func ExampleRender() {
	src := []byte("name: hello\nsteps:\n  - { id: greet, tool: say, retries: 1 }\n")
	f, err := flow.Parse(src, "", &flow.Options{
		Tools: func(name string) (tool.Spec, bool) { return tool.Spec{Name: name}, true },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := graph.Render(os.Stdout, f, "mermaid"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// %% rein graph: hello
	// flowchart TD
	//   start(["start"]):::terminal
	//   s0_greet["greet<br>tool · say"]:::step
	//   finish(["end"]):::terminal
	//   run_failed(["run failed"]):::failed
	//   %% main path
	//   start --> s0_greet
	//   s0_greet --> finish
	//   %% failure paths
	//   s0_greet -.->|"retry ×1 (transient)"| s0_greet
	//   s0_greet -.->|"error"| run_failed
	//   classDef step fill:#eef2ff,stroke:#3949ab,color:#1a237e
	//   classDef terminal fill:#e8f5e9,stroke:#2e7d32,color:#1b5e20
	//   classDef failed fill:#ffebee,stroke:#c62828,color:#b71c1c
	//   classDef fallback fill:#fff3e0,stroke:#ef6c00,color:#e65100
	//   classDef defaulted fill:#fffde7,stroke:#f9a825,color:#f57f17
	//   linkStyle 2,3 stroke:#c62828,color:#c62828
}
