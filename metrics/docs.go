package metrics

import (
	_ "embed"
	"fmt"
	"strings"
	"text/template"
)

//go:embed metrics.md.tmpl
var docsTemplate string

var docs = template.Must(template.New("metrics.md").Funcs(template.FuncMap{
	"cell":   func(s string) string { return strings.ReplaceAll(s, "|", `\|`) },
	"labels": labelsCell,
}).Parse(docsTemplate))

func labelsCell(labels []string) string {
	quoted := make([]string, len(labels))
	for i, l := range labels {
		quoted[i] = "`" + l + "`"
	}
	return strings.Join(quoted, ", ")
}

// Markdown renders docs/metrics.md from the definitions of New.
func Markdown() (string, error) {
	var b strings.Builder
	data := struct {
		Definitions []Definition
		SampleEvery int
	}{New().Definitions(), StoreLatencySampleEvery}
	if err := docs.Execute(&b, data); err != nil {
		return "", fmt.Errorf("metrics: render docs/metrics.md: %w", err)
	}
	return b.String(), nil
}
