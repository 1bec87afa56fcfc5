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
    Topology build(Properties props);
}
