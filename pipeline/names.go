package pipeline

import "fmt"

// maxNameLength is Kafka's limit on topic names, which Kafka Streams applies to processor
// and store names too (Named.validate): store names become changelog topic names.
const maxNameLength = 249

// checkName applies Kafka's topic name rule (Topic.validate), which Kafka Streams' Named
// applies to processor and store names: at most 249 ASCII letters, digits, '.', '_' and
// '-', and not "." or "..". what says which name it is ("processor name", "store name",
// "topic name"). A name the broker would refuse fails here, when the script is loaded and
// its error names the script's line, not at the first produce or topic creation.
func checkName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is illegal: it can't be empty", what)
	case name == "." || name == "..":
		return fmt.Errorf("%s cannot be %q", what, name)
	case len(name) > maxNameLength:
		return fmt.Errorf("%s is illegal: it can't be longer than %d characters, name: %s", what, maxNameLength, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%s %q is illegal: it contains a character other than ASCII alphanumerics, '.', '_' and '-'", what, name)
		}
	}
	return nil
}

// checkNodeNames checks the names a node brings into the topology: its own, its topics and
// the stores it connects to.
func checkNodeNames(n *Node) error {
	if err := checkName("processor name", n.Name); err != nil {
		return err
	}
	for _, t := range n.Topics {
		if err := checkName("topic name", t); err != nil {
			return err
		}
	}
	if n.Topic != "" {
		if err := checkName("topic name", n.Topic); err != nil {
			return err
		}
	}
	for _, s := range n.Stores {
		if err := checkName("store name", s); err != nil {
			return err
		}
	}
	return nil
}
