package dev.fencing.verify;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.fencing.testsupport.RedisServers;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.ParameterException;

class VerifyCommandTest {

    @Test
    void theDefaultsAreTheIssuesSizes() {
        VerifySettings settings = VerifyCommand.parse();

        assertThat(settings.clients()).isEqualTo(6);
        assertThat(settings.resources()).isEqualTo(4);
        assertThat(settings.duration()).isEqualTo(Duration.ofSeconds(60));
        assertThat(settings.faults()).isEqualTo(EnumSet.allOf(FaultKind.class));
        assertThat(settings.modes()).containsExactly(Mode.FENCED, Mode.CONTROL);
        assertThat(settings.allEmbedded()).isTrue();
    }

    @Test
    void aRunMayTakeThreeTimesItsWorkloadTimeAndAtLeastAMinuteMore() {
        assertThat(VerifyCommand.parse("--duration", "10s").hardLimit()).isEqualTo(Duration.ofSeconds(70));
        assertThat(VerifyCommand.parse("--duration", "30s").hardLimit()).isEqualTo(Duration.ofSeconds(90));
        assertThat(VerifyCommand.parse("--duration", "3m").hardLimit()).isEqualTo(Duration.ofMinutes(9));
    }

    @Test
    void flagsAreRead() {
        VerifySettings settings = VerifyCommand.parse(
                "--duration",
                "10m",
                "--seed",
                "7",
                "--clients",
                "3",
                "--resources",
                "2",
                "--faults",
                "pause,leader-kill",
                "--mode",
                "control",
                "--kafka",
                "kafka:9092",
                "--consumer-concurrency",
                "8");

        assertThat(settings.duration()).isEqualTo(Duration.ofMinutes(10));
        assertThat(settings.seed()).isEqualTo(7);
        assertThat(settings.faults()).containsExactlyInAnyOrder(FaultKind.PAUSE, FaultKind.LEADER_KILL);
        assertThat(settings.modes()).containsExactly(Mode.CONTROL);
        assertThat(settings.kafkaBootstrap()).isEqualTo("kafka:9092");
        assertThat(settings.allEmbedded()).isFalse();
        assertThat(settings.consumerConcurrency()).isEqualTo(8);
        assertThat(VerifyCommand.parse().consumerConcurrency())
                .as("the default: serial")
                .isEqualTo(1);
    }

    @Test
    void theRedisResourceNeedsNeitherPostgresNorKafkaButItsOwnServer() {
        VerifySettings embedded = VerifyCommand.parse("--resource", "redis", "--kafka", "kafka:9092");
        VerifySettings external = VerifyCommand.parse("--resource", "redis", "--redis", "redis://cache:6379/0");

        String fromEnvironment = System.getenv(RedisServers.URL_ENV);
        assertThat(embedded.resource()).isEqualTo(Resource.REDIS);
        assertThat(embedded.allEmbedded()).isEqualTo(fromEnvironment == null || fromEnvironment.isBlank());
        assertThat(external.redisUri()).isEqualTo("redis://cache:6379/0");
        assertThat(external.allEmbedded()).isFalse();
        assertThat(VerifyCommand.parse().resource()).isEqualTo(Resource.POSTGRES);
    }

    @Test
    void locksAreOnZooKeeperUnlessEtcdIsAskedForWhichRunsThePostgresResourceWithWholeSecondLeases() {
        VerifySettings etcd = VerifyCommand.parse("--locks", "etcd", "--session-timeout", "3s");

        assertThat(VerifyCommand.parse().locks()).isEqualTo(LockService.ZOOKEEPER);
        assertThat(etcd.locks()).isEqualTo(LockService.ETCD);
        assertThat(etcd.sessionTimeout()).isEqualTo(Duration.ofSeconds(3));
        assertThat(LockService.ETCD.faults()).doesNotContain(FaultKind.SESSION_EXPIRY);
        // a kind a resource lists must be one it can inject, or its minimum stops every run of it
        assertThat(Resource.POSTGRES.faults()).doesNotContain(FaultKind.READ_PAUSE, FaultKind.SESSION_EXPIRY);
        assertThat(Resource.RWLOCK.faults()).contains(FaultKind.READ_PAUSE);
        assertThatThrownBy(() -> VerifyCommand.parse("--locks", "etcd", "--resource", "redis"))
                .isInstanceOf(ParameterException.class)
                .hasMessageContaining("--locks etcd runs the postgres resource only");
        assertThatThrownBy(() -> VerifyCommand.parse("--locks", "etcd", "--session-timeout", "2500ms"))
                .isInstanceOf(ParameterException.class)
                .hasMessageContaining("whole seconds, at least 2s");
        assertThatThrownBy(() -> VerifyCommand.parse("--locks", "etcd", "--zookeeper", "zk:2181"))
                .isInstanceOf(ParameterException.class)
                .hasMessageContaining("--zookeeper");
        assertThatThrownBy(() -> VerifyCommand.parse("--locks", "consul"))
                .isInstanceOf(ParameterException.class)
                .hasMessageContaining("--locks 'consul' is not one of zookeeper, etcd");
    }

    @Test
    void theReadWriteLockResourceIsPickedByNameRunsOnZooKeeperOnlyAndHasReadPauses() {
        VerifySettings settings = VerifyCommand.parse("--resource", "rwlock", "--faults", "read-pause,pause");

        assertThat(settings.resource()).isEqualTo(Resource.RWLOCK);
        assertThat(settings.allEmbedded()).isTrue();
        assertThat(settings.faults()).containsExactlyInAnyOrder(FaultKind.READ_PAUSE, FaultKind.PAUSE);
        assertThat(Resource.RWLOCK.faults())
                .containsExactlyInAnyOrder(
                        FaultKind.PAUSE, FaultKind.READ_PAUSE, FaultKind.PARTITION, FaultKind.LEADER_KILL);
        assertThat(Resource.ELECTION.faults()).doesNotContain(FaultKind.READ_PAUSE);
        assertThatThrownBy(() -> VerifyCommand.parse("--resource", "rwlock", "--locks", "etcd"))
                .isInstanceOf(ParameterException.class)
                .hasMessageContaining("--locks etcd runs the postgres resource only, not --resource rwlock");
        assertThatThrownBy(() -> VerifyCommand.parse("--resource", "rw"))
                .isInstanceOf(ParameterException.class)
                .hasMessageContaining("is not one of postgres, redis, election, rwlock");
    }

    @Test
    void theElectionResourceNeedsPostgresButNeitherKafkaNorRedis() {
        VerifySettings embedded = VerifyCommand.parse("--resource", "election", "--kafka", "kafka:9092");
        VerifySettings external = VerifyCommand.parse("--resource", "Election", "--jdbc-url", "jdbc:postgresql://db/x");

        assertThat(embedded.resource()).isEqualTo(Resource.ELECTION);
        assertThat(embedded.allEmbedded()).isTrue();
        assertThat(external.allEmbedded()).isFalse();
        assertThat(Resource.ELECTION.faults())
                .containsExactlyInAnyOrder(
                        FaultKind.PAUSE, FaultKind.PARTITION, FaultKind.LEADER_KILL, FaultKind.SESSION_EXPIRY);
        assertThat(ElectionWorkload.elections(4, 6))
                .as("elections of 6 writers, 4 resources")
                .isEqualTo(3);
        assertThat(ElectionWorkload.elections(2, 3))
                .as("elections of 3 writers, 2 resources")
                .isEqualTo(1);
        assertThat(ElectionWorkload.elections(4, 1)).as("elections of 1 writer").isEqualTo(1);
    }

    @Test
    void aMissedFaultMinimumNamesTheKindsBelowItWithTheirCounts() {
        Map<FaultKind, Integer> counted = new EnumMap<>(FaultKind.class);
        counted.put(FaultKind.PAUSE, 10);
        counted.put(FaultKind.PARTITION, 1);

        assertThat(ModeRunner.missing(counted, Resource.ELECTION.faults()))
                .isEqualTo("partition 1 of 3, leader-kill 0 of 1, session-expiry 0 of 2");
    }

    @Test
    void badFlagsEndWithExitTwoAndOneSentenceNamingTheFlagAndValue() {
        assertUsage(List.of("--clients", "0"), "--clients 0 is out of range: 1 to 32");
        assertUsage(List.of("--clients", "many"), "'many' is not a whole number");
        assertUsage(List.of("--duration", "5s"), "--duration 5s is out of range: 10s to 2h");
        assertUsage(List.of("--duration", "soon"), "'soon' is not a duration");
        assertUsage(List.of("--faults", "pause,flood"), "--faults: unknown fault 'flood'");
        assertUsage(List.of("--mode", "sideways"), "--mode 'sideways' is not one of fenced, control, both");
        assertUsage(List.of("--jdbc-url", "postgres://db"), "--jdbc-url 'postgres://db' is not a jdbc:postgresql");
        assertUsage(List.of("--session-timeout", "30s"), "--session-timeout 30s is out of range: 1s to 10s");
        assertUsage(List.of("--resource", "mongo"), "--resource 'mongo' is not one of postgres, redis");
        assertUsage(List.of("--redis", "cache:6379"), "--redis 'cache:6379' is not a redis://host:port URI");
        assertUsage(List.of("--consumer-concurrency", "0"), "--consumer-concurrency 0 is out of range: 1 to 64");
    }

    private static void assertUsage(List<String> args, String message) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = VerifyCommand.execute(
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8),
                args.toArray(String[]::new));

        String[] lines = err.toString(StandardCharsets.UTF_8).strip().split("\n");
        assertThat(code).as("exit code of %s", args).isEqualTo(VerifyCommand.EXIT_USAGE);
        assertThat(lines[lines.length - 1])
                .as("last line for %s", args)
                .startsWith("verify: ")
                .contains(message);
        assertThat(out.toString(StandardCharsets.UTF_8))
                .as("nothing ran for %s", args)
                .isEmpty();
    }
}
