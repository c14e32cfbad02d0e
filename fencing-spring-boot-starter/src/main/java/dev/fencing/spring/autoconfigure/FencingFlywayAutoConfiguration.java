package dev.fencing.spring.autoconfigure;

import java.util.Arrays;
import java.util.stream.Stream;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.Location;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnResource;
import org.springframework.boot.flyway.autoconfigure.FlywayConfigurationCustomizer;
import org.springframework.context.annotation.Bean;

/**
 * Adds the toolkit's migrations ({@value #LOCATION}: the {@code fencing} schema, the guard trigger, {@code
 * fencing.protect_table(...)}, the watermark tables) to Spring Boot's Flyway, in the application's own
 * history. Their versions are V1 to V199: the application's migrations must use other versions (the
 * recipe in docs/jdbc.md: V1000 and above), or Flyway refuses to start, naming the duplicate version. A service
 * whose history already uses those versions switches this off ({@code fencing.flyway.enabled=false}) and
 * runs the toolkit's migrations in a history of their own ("Separate histories" in docs/jdbc.md).
 *
 * <p>Present when Flyway, Spring Boot's Flyway support and the {@code db} module are on the class path; an
 * application's own bean named {@code fencingFlywayLocation} replaces the customizer.
 */
@AutoConfiguration(beforeName = "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration")
@ConditionalOnClass({Flyway.class, FlywayConfigurationCustomizer.class})
@ConditionalOnResource(resources = FencingFlywayAutoConfiguration.LOCATION + "/V1__fencing_schema.sql")
@ConditionalOnSwitch("fencing.flyway.enabled")
public class FencingFlywayAutoConfiguration {
    /** Where the {@code db} module keeps the toolkit's migrations. */
    public static final String LOCATION = "classpath:dev/fencing/db/migration";

    @Bean
    @ConditionalOnMissingBean(name = "fencingFlywayLocation")
    public FlywayConfigurationCustomizer fencingFlywayLocation() {
        return configuration -> {
            Location[] current = configuration.getLocations();
            if (Arrays.stream(current).anyMatch(l -> l.getDescriptor().equals(LOCATION))) {
                return;
            }
            configuration.locations(
                    Stream.concat(Arrays.stream(current).map(Location::getDescriptor), Stream.of(LOCATION))
                            .toArray(String[]::new));
        };
    }
}
