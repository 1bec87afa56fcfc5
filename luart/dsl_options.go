package luart

// An optionSet is the options table one or more DSL methods take (Kafka Streams' Named,
// Materialized, Produced, ...): the names options() accepts, and, with their LuaLS types,
// the class the editor definitions declare for it (luals.go).
type optionSet struct {
	class  string // LuaLS class name
	fields []optionField
}

type optionField struct {
	name, typ string
	required  bool
}

func opt(name, typ string) optionField      { return optionField{name: name, typ: typ} }
func required(name, typ string) optionField { return optionField{name: name, typ: typ, required: true} }

func newOptionSet(class string, fields ...optionField) *optionSet {
	return &optionSet{class: class, fields: fields}
}

func (s *optionSet) names() []string {
	out := make([]string, len(s.fields))
	for i, f := range s.fields {
		out[i] = f.name
	}
	return out
}

var (
	optName         = opt("name", "string")
	optKeySerde     = opt("keySerde", "stoat.Serde")
	optValueSerde   = opt("valueSerde", "stoat.Serde")
	optMaterialized = opt("materialized", "string|stoat.Materialized")
	optWithKey      = opt("withKey", "boolean")
	optPartitioner  = opt("partitioner", "stoat.Partitioner")
	// optStreamPartitioner is Kafka's name of Produced's and Repartitioned's partitioner.
	optStreamPartitioner = opt("streamPartitioner", "stoat.Partitioner")
	optHeaders           = opt("headers", "stoat.HeadersIn")
	optTimestamp         = opt("timestamp", "integer")
	optOffsetReset       = opt("offsetReset", `stoat.AutoOffsetReset|"earliest"|"latest"|"none"|string`)
	// schemaSpecFields are the options of stoat.avro{...} and its siblings.
	schemaSpecFields = []optionField{opt("schema", "string"), opt("subject", "string"),
		opt("version", "integer"), opt("latest", "boolean"), opt("autoRegister", "boolean")}
)

// The option sets, one per options table of the DSL and of stoat.test.
var (
	namedOpts   = newOptionSet("stoat.Named", optName)
	withKeyOpts = newOptionSet("stoat.NamedWithKey", optName, optWithKey)
	storedOpts  = newOptionSet("stoat.Stored", optName, optMaterialized)
	fkJoinOpts  = newOptionSet("stoat.ForeignKeyJoined", optName, optMaterialized, optWithKey, optPartitioner,
		opt("otherPartitioner", "stoat.Partitioner"))
	groupedOpts    = newOptionSet("stoat.Grouped", optName, optKeySerde, optValueSerde)
	printedOpts    = newOptionSet("stoat.Printed", opt("label", "string"), optName)
	producedOpts   = newOptionSet("stoat.Produced", optKeySerde, optValueSerde, optPartitioner, optStreamPartitioner, optName)
	repartOpts     = newOptionSet("stoat.Repartitioned", optKeySerde, optValueSerde, opt("numberOfPartitions", "integer"), optPartitioner, optStreamPartitioner, optName)
	branchedOpts   = newOptionSet("stoat.Branched", optName, opt("withFunction", "fun(branch: stoat.KStream): stoat.KStream?"), opt("withConsumer", "fun(branch: stoat.KStream)"))
	processOpts    = newOptionSet("stoat.ProcessOptions", opt("stores", "string[]"), optName)
	streamJoinOpts = newOptionSet("stoat.StreamJoined", optName, opt("storeName", "string"), optKeySerde, optValueSerde,
		opt("otherValueSerde", "stoat.Serde"), opt("thisStoreSupplier", "stoat.WindowStoreSupplier"),
		opt("otherStoreSupplier", "stoat.WindowStoreSupplier"), opt("logging", "boolean|table<string, string>"))
	windowSupplierOpts = newOptionSet("stoat.WindowStoreSupplier", required("name", "string"), opt("retention", "stoat.Duration"),
		opt("windowSize", "stoat.Duration"), opt("retainDuplicates", "boolean"))
	joinedOpts      = newOptionSet("stoat.Joined", optName, optKeySerde, optValueSerde, opt("otherValueSerde", "stoat.Serde"), opt("gracePeriod", "stoat.Duration"))
	globalStoreOpts = newOptionSet("stoat.GlobalStoreConsumed", optKeySerde, optValueSerde, opt("timestampExtractor", "stoat.TimestampExtractor"))
	forwardOpts     = newOptionSet("stoat.Forwarded", optTimestamp, optHeaders, opt("to", "string"))
	consumedOpts    = newOptionSet("stoat.Consumed", optKeySerde, optValueSerde,
		opt("timestampExtractor", `stoat.TimestampExtractor|"record"|"wallclock"`), optName, optOffsetReset)
	tableOpts = newOptionSet("stoat.TableConsumed", optKeySerde, optValueSerde, optMaterialized,
		opt("timestampExtractor", "stoat.TimestampExtractor"), optName, optOffsetReset)
	materializedOpts = newOptionSet("stoat.Materialized", optName, optKeySerde, optValueSerde,
		opt("logging", "boolean|table<string, string>"), opt("caching", "boolean"),
		opt("type", `"timestampedKeyValue"|"versionedKeyValue"`), opt("historyRetention", "stoat.Duration"),
		opt("retention", "stoat.Duration"))
	storeSpecOpts = newOptionSet("stoat.StoreSpec", required("name", "string"), opt("type", "stoat.StoreType"),
		optKeySerde, optValueSerde, opt("logging", "boolean"), opt("retention", "stoat.Duration"),
		opt("windowSize", "stoat.Duration"), opt("retainDuplicates", "boolean"),
		opt("historyRetention", "stoat.Duration"), opt("headers", "boolean"))
	schemaSerdeOpts   = newOptionSet("stoat.SchemaSerdeSpec", schemaSpecFields...)
	protobufSerdeOpts = newOptionSet("stoat.ProtobufSerdeSpec", append(schemaSpecFields[:len(schemaSpecFields):len(schemaSpecFields)],
		opt("message", "string"))...)
	serdeSpecOpts = newOptionSet("stoat.SerdeSpec",
		required("serialize", "fun(topic: string, headers: stoat.Headers, value: any): string?"),
		required("deserialize", "fun(topic: string, headers: stoat.Headers, bytes: string?): any"))

	driverOpts = newOptionSet("stoat.test.DriverOptions", opt("scripts", "string[]"),
		opt("defaultKeySerde", "stoat.SerdeName"), opt("defaultValueSerde", "stoat.SerdeName"),
		opt("wallClockMs", "integer"), opt("partitions", "table<string, integer>"),
		opt("deserializationExceptionHandler", `"LogAndFail"|"LogAndContinue"`),
		opt("processingExceptionHandler", `"LogAndFail"|"LogAndContinue"`), opt("deadLetterQueueTopic", "string"))
	topicOpts         = newOptionSet("stoat.test.TopicSerdes", opt("keySerde", "stoat.SerdeName"), opt("valueSerde", "stoat.SerdeName"))
	pipeInputOpts     = newOptionSet("stoat.test.PipeOptions", optTimestamp, optHeaders)
	pipeListInputOpts = newOptionSet("stoat.test.PipeListOptions", optTimestamp, optHeaders, opt("advance", "stoat.Duration"))
)

// optionSets lists every set, for the definitions.
var optionSets = []*optionSet{
	namedOpts, withKeyOpts, storedOpts, fkJoinOpts, groupedOpts, printedOpts, producedOpts,
	repartOpts, branchedOpts, processOpts, streamJoinOpts, windowSupplierOpts, joinedOpts, globalStoreOpts, forwardOpts, consumedOpts, tableOpts,
	materializedOpts, storeSpecOpts, schemaSerdeOpts, protobufSerdeOpts, serdeSpecOpts, driverOpts, topicOpts, pipeInputOpts, pipeListInputOpts,
}
