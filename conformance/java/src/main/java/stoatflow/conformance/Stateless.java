package stoatflow.conformance;

import java.util.List;
import java.util.Map;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/** Stateless operators, split, merge. */
final class Stateless {
    private Stateless() {}

    static void register(Map<String, Case> cases) {
        cases.put("wordcount", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("text-lines")
                .flatMapValues(v -> v == null ? List.<String>of() : List.of(v.toLowerCase().split("[^a-z]+")))
                .filter((k, w) -> !w.isEmpty())
                .groupBy((k, w) -> w)
                .count()
                .toStream()
                .to("word-counts", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
    }
}
