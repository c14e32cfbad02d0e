package dev.fencing.spring;

import dev.fencing.spring.autoconfigure.FencingElectionAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingEtcdAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingFlywayAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingHealthAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingJdbcAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingKafkaAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingLockedMethodsAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingRedisAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingShedLockAutoConfiguration;
import dev.fencing.spring.autoconfigure.FencingZooKeeperAutoConfiguration;
import java.util.List;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * A service with every auto-configuration of the starter and its locks on etcd, for {@code EtcdWithoutCuratorIT},
 * which runs it on a class loader without Curator and ZooKeeper.
 */
@Configuration(proxyBeanMethods = false)
@ImportAutoConfiguration({
    FencingZooKeeperAutoConfiguration.class,
    FencingEtcdAutoConfiguration.class,
    FencingLockedMethodsAutoConfiguration.class,
    FencingJdbcAutoConfiguration.class,
    FencingFlywayAutoConfiguration.class,
    FencingKafkaAutoConfiguration.class,
    FencingRedisAutoConfiguration.class,
    FencingHealthAutoConfiguration.class,
    FencingShedLockAutoConfiguration.class,
    FencingElectionAutoConfiguration.class
})
public class EtcdOnlyService {

    @Bean
    LockedJob job() {
        return new LockedJob();
    }

    /** Starts the service on {@code endpoints}, takes the lock of a job twice, and returns the two tokens. */
    public static List<Long> lockTwice(List<String> endpoints, String prefix) {
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(EtcdOnlyService.class)
                .web(WebApplicationType.NONE)
                .properties(
                        "fencing.etcd.endpoints=" + String.join(",", endpoints),
                        "fencing.etcd.prefix=" + prefix,
                        "spring.main.banner-mode=off",
                        // not the reservations service's application.properties, which names ZooKeeper
                        "spring.config.name=etcd-only-service")
                .run()) {
            LockedJob job = context.getBean(LockedJob.class);
            return List.of(job.tokenOf("without-curator", 0), job.tokenOf("without-curator", 0));
        }
    }
}
