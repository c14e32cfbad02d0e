package dev.fencing.testsupport;

import org.testcontainers.postgresql.PostgreSQLContainer;
import org.testcontainers.utility.DockerImageName;

/** PostgreSQL in a container, for machines with a Docker engine ({@link ServerSource#TESTCONTAINERS}). */
final class ContainerPostgres implements PostgresEndpoint {
    static final DockerImageName IMAGE = DockerImageName.parse("postgres:14");

    private final PostgreSQLContainer container;

    private ContainerPostgres(PostgreSQLContainer container) {
        this.container = container;
    }

    static ContainerPostgres start() {
        PostgreSQLContainer container = new PostgreSQLContainer(IMAGE);
        container.start();
        return new ContainerPostgres(container);
    }

    @Override
    public String jdbcUrl() {
        return container.getJdbcUrl();
    }

    @Override
    public String user() {
        return container.getUsername();
    }

    @Override
    public String password() {
        return container.getPassword();
    }

    @Override
    public void close() {
        container.stop();
    }

    @Override
    public String toString() {
        return "PostgreSQL container " + IMAGE;
    }
}
