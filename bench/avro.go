package main

import (
	"fmt"

	"github.com/stoatflow/stoatflow/agent/schemaregistry"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// avroSchemaFile is the value schema of the Avro scenario, next to its script.
const avroSchemaFile = "line.avsc"

// avroInput runs the schema registry of the Avro scenario and encodes its input values: the
// generator's line as a bench/scripts/line.avsc record, in Confluent's wire format.
type avroInput struct {
	registry *schemaregistry.Embedded
	client   *schemaregistry.Client
	serde    pipeline.Serde
}

func newAvroInput() (*avroInput, error) {
	schema, err := scripts.ReadFile("scripts/" + avroSchemaFile)
	if err != nil {
		return nil, err
	}
	reg, err := schemaregistry.StartEmbedded("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	cl, err := schemaregistry.NewClient(schemaregistry.Options{URLs: []string{reg.URL()}})
	if err != nil {
		_ = reg.Close()
		return nil, err
	}
	serde, err := schemas.NewFactory(schemas.Config{Registry: cl, AutoRegister: true}).New("avro", false, schemas.Spec{Schema: string(schema), SchemaFile: avroSchemaFile})
	if err != nil {
		_ = reg.Close()
		return nil, err
	}
	return &avroInput{registry: reg, client: cl, serde: serde}, nil
}

// encode is the Avro value of input record seq.
func (a *avroInput) encode(word string, seq int, ts int64, line []byte) ([]byte, error) {
	b, err := a.serde.Serialize(inputTopic, nil, map[string]any{"word": word, "seq": int64(seq), "ts": ts, "line": string(line)})
	if err != nil {
		return nil, fmt.Errorf("avro input: %w", err)
	}
	return b, nil
}

func (a *avroInput) close() { _ = a.registry.Close() }
