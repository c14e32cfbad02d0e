package dev.fencing.spring.internal;

import java.util.Set;
import org.jdbi.v3.core.Jdbi;
import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDependsOnDatabaseInitializationDetector;

/**
 * Tells Spring Boot that {@link Jdbi} beans use the database, so they are made after the database is
 * initialized (Flyway has migrated it), like Boot's own {@code JdbcTemplate}: a bean that checks a
 * protected table when it is made ({@code FencedTable.builder()...build(jdbi)}) finds the table there.
 */
public final class JdbiDependsOnDatabaseInitialization
        extends AbstractBeansOfTypeDependsOnDatabaseInitializationDetector {
    @Override
    protected Set<Class<?>> getDependsOnDatabaseInitializationBeanTypes() {
        return Set.of(Jdbi.class);
    }
}
