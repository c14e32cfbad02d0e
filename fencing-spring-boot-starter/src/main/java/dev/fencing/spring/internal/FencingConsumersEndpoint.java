package dev.fencing.spring.internal;

import java.util.Map;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

/**
 * The actuator endpoint {@code fencingconsumers}: {@code GET /actuator/fencingconsumers} reads each declared
 * consumer's state, {@code POST /actuator/fencingconsumers/{name}} restarts a failed one
 * ({@link DeclaredConsumers#restart(String)}). Exposed over HTTP only when the application includes it, as any
 * actuator endpoint ({@code management.endpoints.web.exposure.include=health,fencingconsumers}), and read-only
 * unless it allows the restart too ({@code management.endpoint.fencingconsumers.access=unrestricted}): a restart
 * is an operator's action, to be secured as such.
 */
@Endpoint(id = "fencingconsumers", defaultAccess = Access.READ_ONLY)
public final class FencingConsumersEndpoint {
    private final DeclaredConsumers consumers;

    public FencingConsumersEndpoint(DeclaredConsumers consumers) {
        this.consumers = consumers;
    }

    @ReadOperation
    public Map<String, String> consumers() {
        return consumers.states();
    }

    /** Restarts the failed consumer {@code name}; answers the states after the restart began. */
    @WriteOperation
    public Map<String, String> restart(@Selector String name) {
        consumers.restart(name);
        return consumers.states();
    }
}
