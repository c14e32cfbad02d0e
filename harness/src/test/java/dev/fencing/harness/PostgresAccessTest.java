package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import org.junit.jupiter.api.Test;

class PostgresAccessTest {
    @Test
    void aChildsPoolComesFromItsArgumentsAndSetsNoPasswordWhenItsVariableIsUnset() {
        ChildArguments args = new ChildArguments(
                new String[] {"jdbcUrl=jdbc:postgresql://localhost:5432/shop", "jdbcUser=app", "worker=3"});

        HikariConfig pool = PostgresAccess.childPool(args, "HARNESS_TEST_UNSET_PASSWORD_VARIABLE", 2, "worker-3");

        assertThat(pool.getJdbcUrl()).isEqualTo("jdbc:postgresql://localhost:5432/shop");
        assertThat(pool.getUsername()).isEqualTo("app");
        assertThat(pool.getPassword()).isNull();
        assertThat(pool.getMaximumPoolSize()).isEqualTo(2);
        assertThat(pool.getPoolName()).isEqualTo("worker-3");
    }
}
