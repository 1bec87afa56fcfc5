package stoatflow.conformance;

import java.util.Map;
import java.util.TreeMap;

/** Every case by name; each group of cases registers itself here. */
final class Cases {
    static final Map<String, Case> ALL = new TreeMap<>();

    static {
        Stateless.register(ALL);
        Aggregations.register(ALL);
        Windows.register(ALL);
        Joins.register(ALL);
        Processors.register(ALL);
        Errors.register(ALL);
    }

    private Cases() {}
}
