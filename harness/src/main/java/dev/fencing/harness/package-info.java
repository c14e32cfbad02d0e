/**
 * The harness of a fault run, shared by {@code verify} and {@code demo-inventory}: the run skeleton ({@link
 * dev.fencing.harness.Coordinator}, which runs a tool's {@link dev.fencing.harness.Experiment}: servers, modes,
 * reports and a {@link dev.fencing.harness.Verdict}, and stops what is left at exit with {@link
 * dev.fencing.harness.ExitCleanup}), a run directory for embedded servers' data ({@link
 * dev.fencing.harness.RunDirectory}), the flag parsers ({@link dev.fencing.harness.Durations}, {@link
 * dev.fencing.harness.WholeNumbers}), the preflight checks ({@link dev.fencing.harness.Preflight}), child JVMs and
 * their freezing with SIGSTOP ({@link dev.fencing.harness.ChildJvm}), one mode's children together ({@link
 * dev.fencing.harness.ChildFleet}), the child's side ({@link dev.fencing.harness.ChildArguments}, {@link
 * dev.fencing.harness.ChildCommands}, {@link dev.fencing.harness.ParentLink}), the events faults wait on ({@link
 * dev.fencing.harness.EventBoard}), the cleanup watchdog ({@link dev.fencing.harness.Watchdog}), access to the
 * servers a run attacks ({@link dev.fencing.harness.ZooKeeperAccess}, {@link dev.fencing.harness.PostgresAccess},
 * {@link dev.fencing.harness.KafkaTopics}) and the pieces of the reports both write ({@link
 * dev.fencing.harness.TimeAxis}, {@link dev.fencing.harness.SvgTimeline}, {@link dev.fencing.harness.Html}, {@link
 * dev.fencing.harness.RunTable}, {@link dev.fencing.harness.RunReport}, {@link dev.fencing.harness.Json}).
 *
 * <p>Not API: nothing here is for applications, and it changes with the two tools. What a run does (its workload,
 * its faults' schedule, its checker and its presentation) stays in each tool, behind its {@code Experiment}.
 */
package dev.fencing.harness;
