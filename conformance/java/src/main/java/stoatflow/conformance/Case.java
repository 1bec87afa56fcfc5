package stoatflow.conformance;

import java.util.Properties;

import org.apache.kafka.streams.Topology;

/**
 * One conformance case's Kafka Streams topology: the twin of conformance/cases/NAME.lua.
 * It may set properties of its own (exception handlers, a dead-letter topic) on top of the
 * runner's.
 */
@FunctionalInterface
public interface Case {
    /**
     * The property that prefixes the names of a case's topics: a real broker is shared by
     * many tests (App), TopologyTestDriver is not (Main leaves it unset).
     */
    String TOPIC_PREFIX = "stoatflow.conformance.topic.prefix";

    Topology build(Properties props);

    /** The topic a case calls name, under the prefix the properties give. */
    static String topic(Properties props, String name) {
        return props.getProperty(TOPIC_PREFIX, "") + name;
    }
}
