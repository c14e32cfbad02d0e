/**
 * The harness of a fault run, shared by {@code verify} and {@code demo-inventory}: the run skeleton ({@link
 * dev.fencing.harness.Coordinator}, which runs a tool's {@link dev.fencing.harness.Experiment}: servers, modes,
 * reports and a {@link dev.fencing.harness.Verdict}, and stops what is left at exit with {@link
 * dev.fencing.harness.ExitCleanup}), a run directory for embedded
 * servers' data ({@link dev.fencing.harness.RunDirectory}), the flag parsers ({@link dev.fencing.harness.Durations},
 * {@link dev.fencing.harness.WholeNumbers}), the preflight checks ({@link dev.fencing.harness.Preflight}), child JVMs
 * and their freezing with SIGSTOP ({@link dev.fencing.harness.ChildJvm}), the cleanup watchdog ({@link
 * dev.fencing.harness.Watchdog}), access to the servers a run attacks ({@link dev.fencing.harness.ZooKeeperAccess},
 * {@link dev.fencing.harness.PostgresAccess}, {@link dev.fencing.harness.KafkaTopics}) and the pieces of the HTML
 * reports both draw ({@link dev.fencing.harness.TimeAxis}, {@link dev.fencing.harness.Html}).
 *
 * <p>Not API: nothing here is for applications, and it changes with the two tools. What a run does (its workload,
 * its faults' schedule, its checker and its presentation) stays in each tool, behind its {@code Experiment}.
 */
package dev.fencing.harness;
