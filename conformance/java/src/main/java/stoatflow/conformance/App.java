package stoatflow.conformance;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.LagInfo;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.BuiltInDslStoreSuppliers;
import org.apache.kafka.streams.state.QueryableStoreType;
import org.apache.kafka.streams.state.internals.StateStoreProvider;

/**
 * A real Kafka Streams application running one case's topology against a broker, for the
 * handover tests (conformance/handover_kafka_test.go):
 * {@code java stoatflow.conformance.App CASE BOOTSTRAP APPLICATION_ID STATE_DIR TOPIC_PREFIX}.
 * It processes under exactly_once_v2 without the record cache, as the Go side's agent does,
 * and prints {@code state NAME} on every state change. Commands on standard input:
 * {@code dump PATH} writes every store's contents in the wire format (Dump) and answers
 * {@code dumped}; {@code stop} closes the application, leaving the group, and exits 0. The
 * end of standard input (the test is gone) exits at once.
 */
public final class App {
    private App() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: App CASE BOOTSTRAP APPLICATION_ID STATE_DIR TOPIC_PREFIX");
            System.exit(2);
        }
        Case c = Cases.ALL.get(args[0]);
        if (c == null) {
            System.err.println("no case named " + args[0]);
            System.exit(2);
        }
        Properties p = new Properties();
        p.put(Case.TOPIC_PREFIX, args[4]);
        Topology topology = c.build(p);
        p.remove(Case.TOPIC_PREFIX);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[2]);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[3]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // Every update reaches the output, as in TopologyTestDriver: the outputs can then be
        // compared with one uninterrupted run record for record.
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        // The stores restore from their changelogs at every start, as Dump reads them in
        // TopologyTestDriver; RocksDB would only add its start-up time.
        p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers.class);
        // A killed instance leaves the group and its open transaction behind: short timeouts
        // let the other side in within seconds, not Kafka's 45 s and 10 s.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 500);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 5000);

        KafkaStreams streams = new KafkaStreams(topology, p);
        PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
        streams.setStateListener((now, before) -> out.println("state " + now));
        streams.setUncaughtExceptionHandler(e -> {
            StringWriter sw = new StringWriter();
            e.printStackTrace(new PrintWriter(sw));
            out.println("error " + Wire.text(sw.toString()));
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.startsWith("dump ")) {
                dump(streams, topology, Path.of(line.substring(5)));
                out.println("dumped");
            } else if (line.equals("stop")) {
                streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP));
                out.println("stopped");
                System.exit(0);
            } else {
                out.println("error " + Wire.text("unknown command: " + line));
            }
        }
        Runtime.getRuntime().halt(1);
    }

    /**
     * Writes every store of the topology, as Main writes TopologyTestDriver's, once no store
     * partition trails its changelog: a rebalance may have made a task restore its in-memory
     * stores again, and the dump waits until it has, and is taken again if one started.
     */
    private static void dump(KafkaStreams streams, Topology topology, Path path) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            if (caughtUp(streams)) {
                String dumped = dumpOnce(streams, topology);
                if (caughtUp(streams)) {
                    Files.writeString(path, dumped, StandardCharsets.UTF_8);
                    return;
                }
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("the stores did not catch up with their changelogs within 60 s: " + streams.allLocalStorePartitionLags());
            }
            Thread.sleep(50);
        }
    }

    private static boolean caughtUp(KafkaStreams streams) {
        if (streams.state() != KafkaStreams.State.RUNNING) {
            return false;
        }
        for (Map<Integer, LagInfo> lags : streams.allLocalStorePartitionLags().values()) {
            for (LagInfo lag : lags.values()) {
                if (lag.offsetLag() != 0) {
                    return false;
                }
            }
        }
        return true;
    }

    private static String dumpOnce(KafkaStreams streams, Topology topology) {
        Map<String, StateStore> stores = new TreeMap<>();
        for (String name : storeNames(topology.describe())) {
            List<StateStore> local = streams.store(StoreQueryParameters.fromNameAndType(name, new AnyStore()));
            if (local.size() != 1) {
                throw new IllegalStateException("store " + name + " has " + local.size() + " local partitions, want 1");
            }
            stores.put(name, local.get(0));
        }
        StringWriter sw = new StringWriter();
        PrintWriter w = new PrintWriter(sw);
        w.println("case app 0");
        Dump.stores(stores, new Run("app", 0), w);
        w.println("end");
        w.flush();
        return sw.toString();
    }

    private static TreeSet<String> storeNames(TopologyDescription d) {
        TreeSet<String> names = new TreeSet<>();
        for (TopologyDescription.Subtopology s : d.subtopologies()) {
            for (TopologyDescription.Node n : s.nodes()) {
                if (n instanceof TopologyDescription.Processor proc) {
                    names.addAll(proc.stores());
                }
            }
        }
        return names;
    }

    /** Hands out the stores themselves (metered), whatever their kind. */
    private static final class AnyStore implements QueryableStoreType<List<StateStore>> {
        @Override
        public boolean accepts(StateStore store) {
            return true;
        }

        // The provider hands out what accepts took, typed as the query type's result.
        @Override
        @SuppressWarnings({"unchecked", "rawtypes"})
        public List<StateStore> create(StateStoreProvider provider, String storeName) {
            return new ArrayList<>((List<StateStore>) provider.stores(storeName, (QueryableStoreType) this));
        }
    }
}
