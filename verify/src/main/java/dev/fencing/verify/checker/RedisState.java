package dev.fencing.verify.checker;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a run left in Redis, read after it ended, per resource: the list its log key holds (the operation ids the
 * script writes appended, in Redis's order), the text its value key holds, and the token its token key holds. A
 * resource without a key of some kind has no entry in that map. The reading is the workload's (it knows the key
 * names); the checker gets plain values, so it depends on no Redis client.
 *
 * @param logs resource to the ids in its log, in list order
 * @param values resource to its value key's text
 * @param tokens resource to its token key's number
 */
public record RedisState(Map<String, List<Long>> logs, Map<String, String> values, Map<String, Long> tokens) {

    public RedisState {
        logs = Collections.unmodifiableMap(new TreeMap<>(logs));
        values = Collections.unmodifiableMap(new TreeMap<>(values));
        tokens = Collections.unmodifiableMap(new TreeMap<>(tokens));
    }
}
