package agent

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKafkaAndLevelDBStayBehindTheirPackages checks DESIGN §1's layout for agent/ and the
// packages under it: sarama is imported by agent/kafkaio alone, goleveldb by none (it is
// behind state/). Tests may use sarama, as the second client of the Kafka-path tests.
func TestKafkaAndLevelDBStayBehindTheirPackages(t *testing.T) {
	dirs := []string{"."}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" {
			dirs = append(dirs, e.Name())
		}
	}
	for _, dir := range dirs {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				continue
			}
			t.Fatal(err)
		}
		name := "agent"
		if dir != "." {
			name += "/" + filepath.ToSlash(dir)
		}
		for _, imp := range pkg.Imports {
			sarama := imp == "github.com/IBM/sarama" || strings.HasPrefix(imp, "github.com/IBM/sarama/")
			if (sarama && dir != "kafkaio") || strings.HasPrefix(imp, "github.com/syndtr/goleveldb") {
				t.Errorf("%s imports %s", name, imp)
			}
		}
	}
}
