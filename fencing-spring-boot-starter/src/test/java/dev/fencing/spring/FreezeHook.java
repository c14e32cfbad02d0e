package dev.fencing.spring;

import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.SqlStatements;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Added to a service instance whose statements on the inventory table a test freezes ({@link Freezer}); it also runs
 * {@link LockedJob}.
 */
@Configuration(proxyBeanMethods = false)
class FreezeHook {
    @Bean
    LockedJob job() {
        return new LockedJob();
    }

    @Bean
    LockedJob.Outer outerJob(LockedJob job) {
        return new LockedJob.Outer(job);
    }

    @Bean
    Freezer freezer() {
        return new Freezer();
    }

    @Bean
    static BeanPostProcessor freezeInventoryStatements(ObjectProvider<Freezer> freezer) {
        return new BeanPostProcessor() {
            @Override
            public Object postProcessAfterInitialization(Object bean, String name) {
                if (bean instanceof Jdbi jdbi) {
                    jdbi.getConfig(SqlStatements.class).setSqlLogger(freezer.getObject());
                }
                return bean;
            }
        };
    }
}
