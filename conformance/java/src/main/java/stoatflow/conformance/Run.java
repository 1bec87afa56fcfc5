package stoatflow.conformance;

import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.header.Headers;

/** One run of a case on one seed's input, as the Go driver wrote it. */
final class Run {
    final String name;
    final long seed;
    /** Prefixes the case's topic names (Case.TOPIC_PREFIX); the input steps name them whole. */
    String topicPrefix = "";
    final List<Step> steps = new ArrayList<>();
    final List<byte[]> probeKeys = new ArrayList<>();
    final List<Long> probeTimes = new ArrayList<>();

    Run(String name, long seed) {
        this.name = name;
        this.seed = seed;
    }

    /** An input record, or (topic == null) a wall-clock advance of wallMs. */
    static final class Step {
        String topic;
        int partition;
        long timestamp;
        byte[] key;
        byte[] value;
        Headers headers;
        long wallMs;
    }
}
