package dev.fencing.redis.internal;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The user scripts a writer keeps ready to send, keyed by body, at most {@code capacity} of them: beyond that
 * the least recently run is dropped. A dropped body's script is made again when it next runs, with the same
 * text and SHA-1, so it runs as before. Thread-safe: a script is made outside the lock (it hashes the whole
 * text), so two threads may both make one, and the first kept wins.
 */
final class ScriptCache {
    private final Map<String, LuaScripts.Script> scripts;

    ScriptCache(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("script cache capacity must be >= 1, got " + capacity);
        }
        this.scripts = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, LuaScripts.Script> eldest) {
                return size() > capacity;
            }
        };
    }

    LuaScripts.Script script(String body) {
        LuaScripts.Script script;
        synchronized (scripts) {
            script = scripts.get(body);
        }
        if (script != null) {
            return script;
        }
        LuaScripts.Script made = LuaScripts.userScript(body);
        synchronized (scripts) {
            LuaScripts.Script kept = scripts.putIfAbsent(body, made);
            return kept == null ? made : kept;
        }
    }

    int size() {
        synchronized (scripts) {
            return scripts.size();
        }
    }
}
