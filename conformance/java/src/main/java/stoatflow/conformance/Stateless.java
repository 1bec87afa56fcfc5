package stoatflow.conformance;

import java.util.List;
import java.util.Map;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;

/** Stateless operators, split, merge, repartition, serdes. */
final class Stateless {
    private Stateless() {}

    /** How the Lua twins print nil. */
    static String n(Object x) {
        return x == null ? "~" : x.toString();
    }

    static void register(Map<String, Case> cases) {
        cases.put("wordcount", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream(Case.topic(p, "text-lines"))
                .flatMapValues(v -> v == null ? List.<String>of() : List.of(v.toLowerCase().split("[^a-z]+")))
                .filter((k, w) -> !w.isEmpty())
                .groupBy((k, w) -> w)
                .count()
                .toStream()
                .to(Case.topic(p, "word-counts"), Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("stateless_chain", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .filter((k, v) -> v == null || v.length() != 3)
                .filterNot((k, v) -> "e".equals(k))
                .mapValues((k, v) -> n(k) + ":" + n(v))
                .selectKey((k, v) -> k == null ? null : k + k)
                .peek((k, v) -> { })
                .flatMapValues(v -> List.of(v, v.toUpperCase()))
                .map((k, v) -> KeyValue.pair(v.substring(0, 1), k))
                .flatMap((k, v) -> v == null ? List.<KeyValue<String, String>>of() : List.of(KeyValue.pair(k, v), KeyValue.pair(v, k)))
                .to("out");
            return b.build();
        });
        cases.put("split_branch", p -> {
            StreamsBuilder b = new StreamsBuilder();
            Map<String, KStream<String, String>> br = b.<String, String>stream("in").split(Named.as("sp-"))
                .branch((k, v) -> v == null, Branched.as("nulls"))
                .branch((k, v) -> v.length() <= 3, Branched.withFunction(s -> s.mapValues(v -> v.toUpperCase()), "short"))
                .defaultBranch(Branched.as("long"));
            br.get("sp-nulls").to("nulls");
            br.get("sp-short").to("short");
            br.get("sp-long").to("long");
            return b.build();
        });
        cases.put("merge", p -> {
            StreamsBuilder b = new StreamsBuilder();
            KStream<String, String> l = b.stream("left");
            KStream<String, String> r = b.stream("right");
            l.mapValues(v -> "L" + n(v)).merge(r.mapValues(v -> "R" + n(v)), Named.as("both")).to("out");
            return b.build();
        });
        cases.put("topic_extractor", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in").to((k, v, ctx) -> v == null ? "nulls" : "out-" + v.length());
            return b.build();
        });
        cases.put("invalid_utf8", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.stream("in", Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> v == null ? null : "<" + v + ">")
                .to("out");
            return b.build();
        });
        cases.put("repartition", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .selectKey((k, v) -> v)
                .repartition(Repartitioned.as("rp"))
                .groupByKey()
                .count(Materialized.as("counts"))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("long_values", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.stream("in", Consumed.with(Serdes.String(), Serdes.Long()))
                .mapValues(v -> v == null ? null : v * 2 - 1)
                .filter((k, v) -> v == null || v % 3 != 0)
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
            return b.build();
        });
        cases.put("processing_error", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in")
                .mapValues(v -> {
                    if ("boom".equals(v)) {
                        throw new IllegalStateException("boom");
                    }
                    return n(v);
                })
                .to("out");
            return b.build();
        });
    }
}
