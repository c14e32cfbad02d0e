package dev.fencing.kafka.internal;

import java.util.List;
import org.apache.kafka.common.TopicPartition;

/**
 * A transactional handler whose effects the resource itself fences, written together at the end of each unit
 * of work: a record the handler took may be refused there, by the resource, as stale. The serial unit of work
 * calls {@link #finishUnit} after its last record and before it awaits its dead letters and saves; each
 * refused record is then dropped or dead-lettered by the same rules as a record the fence refused, and counted
 * so, its offset committed with the unit. Implemented by {@link FencedRowUnits}.
 *
 * @param <T> the transaction the effects are written in
 */
public interface UnitEffects<T> {
    /**
     * A record whose effect the resource refused: the token it holds is at least the record's. {@code token} is the
     * one the record was handled under (as fetched: the handler may have changed the record's headers since).
     */
    record Refusal(TopicPartition partition, long offset, long token, long storedToken) {}

    /**
     * Writes the effects of the records handed to the handler in this unit, in {@code transaction}, the effects
     * on any one row in the order their records were handled; returns the records whose effect was refused, in
     * the order they were handled.
     *
     * @throws RuntimeException if the effects could not be written: the unit is rolled back
     */
    List<Refusal> finishUnit(T transaction);

    /**
     * Whether the running unit should end after the poll it is in, although its interval and record limit
     * allow more: its effects would grow costlier per record if it went on (many updates of one row in one
     * transaction each cost more than the one before).
     */
    boolean unitFull();
}
