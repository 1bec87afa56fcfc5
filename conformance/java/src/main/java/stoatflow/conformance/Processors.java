package stoatflow.conformance;

import static stoatflow.conformance.Windows.ms;

import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.StreamPartitioner;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStoreWithHeaders;
import org.apache.kafka.streams.state.ValueTimestampHeaders;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;

/** The Processor API, punctuation, headers-aware stores and partitioners. */
final class Processors {
    private Processors() {}

    /** Counts per key; a punctuator of the given type forwards every count every 100 ms. */
    static final class Counter implements Processor<String, String, String, Long> {
        private final PunctuationType type;
        private KeyValueStore<String, Long> counts;

        Counter(PunctuationType type) {
            this.type = type;
        }

        @Override
        public void init(ProcessorContext<String, Long> ctx) {
            counts = ctx.getStateStore("counts");
            ctx.schedule(ms(100), type, ts -> {
                try (KeyValueIterator<String, Long> it = counts.all()) {
                    while (it.hasNext()) {
                        KeyValue<String, Long> kv = it.next();
                        ctx.forward(new Record<>(kv.key, kv.value, ts));
                    }
                }
            });
        }

        @Override
        public void process(Record<String, String> r) {
            if (r.key() == null) {
                return;
            }
            Long n = counts.get(r.key());
            counts.put(r.key(), n == null ? 1 : n + 1);
        }
    }

    /**
     * Runs one versioned store operation per record, its value naming it and its timestamp
     * ("x@1999": put x at 1999; "n@…": put null; "d@…": delete), and forwards what it returned
     * and what the key reads then: latest, and as of every probe time.
     */
    static final class VersionedOps implements Processor<String, String, String, String> {
        static final long HISTORY_RETENTION = 4500;
        private static final long[] PROBES;

        static {
            long[] bases = {0, 1998, 3998, 6600};
            PROBES = new long[bases.length * 7 + 3];
            int i = 0;
            for (long base : bases) {
                for (int d = 0; d <= 6; d++) {
                    PROBES[i++] = base + d;
                }
            }
            PROBES[i++] = 1000;
            PROBES[i++] = 3000;
            PROBES[i] = 5000;
        }

        private ProcessorContext<String, String> ctx;
        private VersionedKeyValueStore<String, String> vs;

        @Override
        public void init(ProcessorContext<String, String> c) {
            ctx = c;
            vs = c.getStateStore("vs");
        }

        private static String text(VersionedRecord<String> r) {
            if (r == null) {
                return "-";
            }
            return r.value() + "@" + r.timestamp() + "-" + r.validTo().map(String::valueOf).orElse("");
        }

        @Override
        public void process(Record<String, String> r) {
            if (r.key() == null || r.value() == null) {
                return;
            }
            int at = r.value().indexOf('@');
            String op = r.value().substring(0, at);
            long ts = Long.parseLong(r.value().substring(at + 1));
            StringBuilder out = new StringBuilder(r.value()).append(' ');
            if (op.equals("d")) {
                out.append(text(vs.delete(r.key(), ts)));
            } else {
                long validTo = vs.put(r.key(), op.equals("n") ? null : op, ts);
                out.append(validTo == VersionedKeyValueStore.PUT_RETURN_CODE_NOT_PUT ? "notput" : String.valueOf(validTo));
            }
            out.append(" | ").append(text(vs.get(r.key())));
            for (long t : PROBES) {
                out.append(' ').append(t).append('=').append(text(vs.get(r.key(), t)));
            }
            ctx.forward(r.withValue(out.toString()));
        }
    }

    static void register(Map<String, Case> cases) {
        for (PunctuationType type : PunctuationType.values()) {
            String name = type == PunctuationType.STREAM_TIME ? "punctuate_stream_time" : "punctuate_wall_clock";
            cases.put(name, p -> {
                StreamsBuilder b = new StreamsBuilder();
                b.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("counts"), Serdes.String(), Serdes.Long()));
                b.<String, String>stream("in")
                    .process(() -> new Counter(type), Named.as("counter"), "counts")
                    .to("out", Produced.with(Serdes.String(), Serdes.Long()));
                return b.build();
            });
        }
        cases.put("headers_store", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.addStateStore(Stores.timestampedKeyValueStoreWithHeadersBuilder(
                Stores.persistentTimestampedKeyValueStoreWithHeaders("last"), Serdes.String(), Serdes.String()));
            b.<String, String>stream("in")
                .process(() -> new Processor<String, String, String, String>() {
                    private ProcessorContext<String, String> ctx;
                    private TimestampedKeyValueStoreWithHeaders<String, String> last;

                    @Override
                    public void init(ProcessorContext<String, String> c) {
                        ctx = c;
                        last = c.getStateStore("last");
                    }

                    @Override
                    public void process(Record<String, String> r) {
                        if (r.key() == null) {
                            return;
                        }
                        ValueTimestampHeaders<String> prev = last.get(r.key());
                        if (r.value() == null) {
                            last.delete(r.key());
                        } else {
                            last.put(r.key(), ValueTimestampHeaders.make(r.value(), r.timestamp(), r.headers()));
                        }
                        if (prev != null) {
                            ctx.forward(new Record<>(r.key(), prev.value(), prev.timestamp(), prev.headers()));
                        }
                    }
                }, "last")
                .to("out");
            return b.build();
        });
        cases.put("headers_partitioner", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.<String, String>stream("in").to("out", Produced.<String, String>streamPartitioner(new StreamPartitioner<>() {
                @Override
                public Optional<Set<Integer>> partitions(String topic, String key, String value, int numPartitions) {
                    return Optional.empty();
                }

                @Override
                public Optional<Set<Integer>> partitions(String topic, String key, String value, Headers headers, int numPartitions) {
                    Header h = headers.lastHeader("h");
                    if (h != null && h.value() != null && h.value().length == 1 && h.value()[0] == '0') {
                        return Optional.of(Set.of());
                    }
                    return Optional.empty();
                }
            }));
            return b.build();
        });
        cases.put("versioned_store_ops", p -> {
            StreamsBuilder b = new StreamsBuilder();
            b.addStateStore(Stores.versionedKeyValueStoreBuilder(
                Stores.persistentVersionedKeyValueStore("vs", ms(VersionedOps.HISTORY_RETENTION)), Serdes.String(), Serdes.String()));
            b.<String, String>stream("in")
                .process(VersionedOps::new, Named.as("ops"), "vs")
                .to("out");
            return b.build();
        });
        cases.put("deserialization_error", p -> {
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
