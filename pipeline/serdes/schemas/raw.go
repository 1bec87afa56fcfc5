package schemas

// Raw is an Avro record whose bytes are checked but not yet decoded. A serde set to
// SetRawValues hands these on instead of Go values, for a reader that builds its own values
// (the Lua runtime builds its tables straight from the bytes, with Build) and so would only
// convert the Go values again.
type Raw struct {
	codec *avroCodec
	text  string // the payload: one copy, whose slices become the record's strings
}

// Value is r's value in the package's Go values, as Deserialize gives them.
func (r *Raw) Value() (any, error) {
	return decodeAvro(r.codec.root, r.text, Builder[any](goBuilder{}))
}

// Schema is the schema r was written with.
func (r *Raw) Schema() AvroSchema { return AvroSchema{r.codec.root} }

// Build builds r's value with b. The bytes were checked when r was made, so an error is a
// bug rather than bad input.
func Build[V any](r *Raw, b Builder[V]) (V, error) {
	return decodeAvro(r.codec.root, r.text, b)
}

// Foreign is a value another runtime holds in its own form (the Lua runtime's tables). An
// Avro writer has it write itself with AppendAvro; a writer of another format, or one whose
// AppendAvro failed (ErrConvertFirst or a value the schema refuses), writes its Value, so
// that its errors are those of converting and writing the Go values.
type Foreign interface {
	AppendAvro(dst []byte, s AvroSchema) ([]byte, error)
	Value() (any, error)
}

// SetRawValues makes Deserialize return an Avro record as a *Raw, checked as it checks a
// record it decodes (the same errors), while on is true. Null values (and records of other
// formats, or larger than maxSharedPayload) are decoded as before. Only a reader that
// handles *Raw may be given such a serde's values; Serialize takes them back.
func (s *Serde) SetRawValues(on bool) { s.raw.Store(on) }

// check reads payload as decode does, building nothing; a null value is nil, else a *Raw.
func (c *avroCodec) check(payload []byte) (any, error) {
	text := string(payload)
	null, err := decodeAvro(c.root, text, Builder[bool](nullBuilder{}))
	if err != nil || null {
		return nil, err
	}
	return &Raw{codec: c, text: text}, nil
}

// nullBuilder builds only whether a value is null: the check of a Raw record, which needs
// to know whether the record is a tombstone.
type nullBuilder struct{}

func (nullBuilder) Null() bool             { return true }
func (nullBuilder) Bool(bool) bool         { return false }
func (nullBuilder) Long(int64) bool        { return false }
func (nullBuilder) Double(float64) bool    { return false }
func (nullBuilder) String(string) bool     { return false }
func (nullBuilder) Bytes([]byte) bool      { return false }
func (nullBuilder) Array([]bool) bool      { return false }
func (nullBuilder) Record(int) bool        { return false }
func (nullBuilder) Map(int) bool           { return false }
func (nullBuilder) Set(bool, string, bool) {}
