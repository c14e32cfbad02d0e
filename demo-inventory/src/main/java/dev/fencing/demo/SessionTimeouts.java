package dev.fencing.demo;

import dev.fencing.harness.Durations;
import dev.fencing.harness.UsageException;
import java.time.Duration;

/**
 * The session timeout ZooKeeper actually grants. By default a server clamps the requested timeout to between 2
 * and 20 times its {@code tickTime} (an ensemble with the default 2 s tickTime grants at least 4 s when 2 s is
 * asked), and a pause that does not outlast the granted timeout leaves the frozen worker its lock: the run
 * would test nothing. Stateless and thread-safe.
 */
final class SessionTimeouts {
    private SessionTimeouts() {}

    /**
     * @throws UsageException naming both numbers when {@code pause} does not exceed {@code granted}
     */
    static void requirePauseLonger(Duration pause, Duration requested, Duration granted) {
        if (pause.compareTo(granted) <= 0) {
            throw new UsageException("ZooKeeper granted a session timeout of " + Durations.format(granted)
                    + " when " + Durations.format(requested) + " was asked (" + DemoSettings.SESSION_TIMEOUT_FLAG
                    + "), and " + DemoSettings.PAUSE_FLAG + " " + Durations.format(pause)
                    + " does not exceed it: a frozen worker would keep its lock; use " + DemoSettings.PAUSE_FLAG
                    + " " + Durations.format(granted.plus(granted.dividedBy(2))) + " or more");
        }
    }
}
