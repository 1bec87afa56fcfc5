package kafkatest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestDocExample: docs/testing.md's example of a real-broker test is TestKafkaEcho of
// smoke_kafka_test.go word for word, so it compiles and runs (under make test-kafka).
func TestDocExample(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	i := strings.Index(section, "### Writing one")
	if i < 0 {
		t.Fatal("docs/testing.md: no section ### Writing one")
	}
	section = section[i:]
	start := strings.Index(section, "```go\n")
	end := strings.Index(section[start+6:], "```\n")
	if start < 0 || end < 0 {
		t.Fatal("docs/testing.md, ### Writing one: no ```go block")
	}
	example := section[start+6 : start+6+end]

	src, err := os.ReadFile("smoke_kafka_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "smoke_kafka_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "TestKafkaEcho" {
			body := string(src[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset]) + "\n"
			if body != example {
				t.Errorf("docs/testing.md's example differs from TestKafkaEcho in smoke_kafka_test.go:\n--- doc\n%s--- test\n%s", example, body)
			}
			return
		}
	}
	t.Fatal("smoke_kafka_test.go has no TestKafkaEcho")
}
