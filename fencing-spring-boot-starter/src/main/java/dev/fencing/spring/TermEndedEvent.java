package dev.fencing.spring;

import dev.fencing.lock.Leadership;
import dev.fencing.lock.LeaseLoss;
import org.springframework.context.ApplicationEvent;

/**
 * Published by {@link FencedElectionParticipant} when a term that began here has ended: the connection was
 * suspended or the session lost, this JVM paused too long, or the participant stepped down (also on the
 * context's shutdown). Stop writing under {@link #token()}: a fenced resource refuses its writes once the
 * next leader has written. Published after the term is invalid and its node deleted, on the participant's
 * thread.
 *
 * <pre>{@code
 * @EventListener
 * void deposed(TermEndedEvent event) {
 *     LOG.info("term {} ended: {}", event.token(), event.cause());
 * }
 * }</pre>
 */
public final class TermEndedEvent extends ApplicationEvent {
    private static final long serialVersionUID = 1L;

    private final transient Leadership leadership;
    private final LeaseLoss cause;

    public TermEndedEvent(FencedElectionParticipant source, Leadership leadership, LeaseLoss cause) {
        super(source);
        this.leadership = leadership;
        this.cause = cause;
    }

    /** The term that ended. */
    public Leadership leadership() {
        return leadership;
    }

    /** The ended term's fence token. */
    public long token() {
        return leadership.token();
    }

    /** Why it ended: {@link LeaseLoss#STEPPED_DOWN} on shutdown or when a start listener failed. */
    public LeaseLoss cause() {
        return cause;
    }

    @Override
    public String toString() {
        return "TermEndedEvent[" + leadership.path() + ", " + leadership.participantId() + ", token "
                + leadership.token() + ", " + cause + "]";
    }
}
