package dev.fencing.verify;

import dev.fencing.verify.checker.CheckResult;
import dev.fencing.verify.checker.History;
import java.util.List;

/**
 * A resource's part of a run in the coordinator, for the resources other than the PostgreSQL and Kafka chain
 * (which {@link ModeRunner} runs with its tables, topic and consumers): what the writers are told, what is made
 * before a run and removed after it, and how the run is checked. {@link ModeRunner} does the rest (servers,
 * writers, locks, nemesis, histories, reports). A new resource is one of these, the writers' side ({@code
 * client.WriterWorkload}), a checker, and a {@link Resource} constant naming the faults that apply.
 */
interface Workload {

    /** Makes the mode's keys (or tables) afresh, before its writers start. */
    void prepare(Mode mode);

    /** The writers' {@code key=value} arguments besides the common ones (client, mode, resource, locks, seed). */
    List<String> writerArguments(Mode mode);

    /** Reads what the mode's run left in the resource and checks it against the histories. */
    CheckResult check(Mode mode, History history);

    /** Removes what the mode's run left, on an external server when {@code --keep} is not given. */
    void remove(Mode mode);
}
