package dev.fencing.verify;

import dev.fencing.verify.checker.CheckResult;
import java.util.List;

/**
 * The {@code --json} summary, exactly these keys in this order (scripts and CI read them; do not rename):
 *
 * <pre>
 * {"runs":[{"mode":"fenced"|"control","seed":N,"operations":N,"ok":N,"failed":N,"indeterminate":N,
 *   "faults":{"pause":N,"partition":N,"leaderKill":N,"backendKill":N,"consumerCrash":N,"rebalance":N},
 *   "violations":N,"lostAcknowledged":N,"duplicated":N,"recordsProduced":N,"recordsApplied":N,
 *   "recordsDeadLettered":N,"recordsDropped":N,"resource":"postgres"|"redis"}]}
 * </pre>
 *
 * Fault counts are the counted faults (see {@link Fault#counted()}); the record counts are 0 for a resource that
 * publishes no records. Stateless.
 */
final class JsonSummary {
    private JsonSummary() {}

    static String of(List<RunResult> runs) {
        StringBuilder json = new StringBuilder("{\"runs\":[");
        for (int i = 0; i < runs.size(); i++) {
            RunResult run = runs.get(i);
            CheckResult check = run.check();
            json.append(i == 0 ? "" : ",")
                    .append("{\"mode\":\"")
                    .append(run.mode().label())
                    .append("\",\"seed\":")
                    .append(run.seed())
                    .append(",\"operations\":")
                    .append(check.operations())
                    .append(",\"ok\":")
                    .append(check.ok())
                    .append(",\"failed\":")
                    .append(check.failed())
                    .append(",\"indeterminate\":")
                    .append(check.indeterminate())
                    .append(",\"faults\":{");
            FaultKind[] kinds = FaultKind.values();
            for (int k = 0; k < kinds.length; k++) {
                json.append(k == 0 ? "" : ",")
                        .append('"')
                        .append(kinds[k].jsonName())
                        .append("\":")
                        .append(run.counted().getOrDefault(kinds[k], 0));
            }
            json.append("},\"violations\":")
                    .append(check.violations().size())
                    .append(",\"lostAcknowledged\":")
                    .append(check.lostAcknowledged())
                    .append(",\"duplicated\":")
                    .append(check.duplicated())
                    .append(",\"recordsProduced\":")
                    .append(check.recordsProduced())
                    .append(",\"recordsApplied\":")
                    .append(check.recordsApplied())
                    .append(",\"recordsDeadLettered\":")
                    .append(check.recordsDeadLettered())
                    .append(",\"recordsDropped\":")
                    .append(check.recordsDropped())
                    .append(",\"resource\":\"")
                    .append(run.resource().flagName())
                    .append("\"}");
        }
        return json.append("]}\n").toString();
    }
}
