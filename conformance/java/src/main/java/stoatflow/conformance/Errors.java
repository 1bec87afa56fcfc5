package stoatflow.conformance;

import java.util.Map;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/** The exception handlers and the dead-letter queue (KIP-1033, KIP-1034). */
final class Errors {
    private Errors() {}

    /** The dead-letter topic of the cases that have one (the Go side's Handlers name it too). */
    static final String DLQ = "dlq";

    static void register(Map<String, Case> cases) {
        cases.put("processing_error_continue", p -> {
            p.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, LogAndContinueProcessingExceptionHandler.class);
            p.put(StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG, DLQ);
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .mapValues(v -> {
                    if ("boom".equals(v)) {
                        throw new IllegalStateException("boom");
                    }
                    return Stateless.n(v);
                })
                .groupByKey()
                .reduce((agg, v) -> {
                    if ("boom2".equals(v)) {
                        throw new IllegalStateException("boom2");
                    }
                    return agg + "+" + v;
                }, Materialized.as("joined"))
                .toStream()
                .to("out");
            return b.build();
        });
        cases.put("deserialization_error_continue", p -> {
            p.put(StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG, LogAndContinueExceptionHandler.class);
            p.put(StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG, DLQ);
            StreamsBuilder b = new StreamsBuilder();
            b.stream("in", Consumed.with(Serdes.String(), Serdes.Long()))
                .groupByKey()
                .reduce(Long::sum)
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
    }
}
