package dev.fencing.spring;

import dev.fencing.lock.Leadership;
import org.springframework.context.ApplicationEvent;

/**
 * Published by {@link FencedElectionParticipant} when this instance is elected: its term has begun. Send
 * {@link #token()} with every write made as leader; a fenced resource refuses it once a later term's token
 * was accepted.
 *
 * <pre>{@code
 * @EventListener
 * void leading(TermStartedEvent event) {
 *     LOG.info("leading {} with term token {}", event.leadership().path(), event.token());
 * }
 * }</pre>
 *
 * <p>Listeners run on the participant's thread, as part of the term: a listener that blocks is interrupted
 * when the term ends, and the term does not end before its listeners have returned or been interrupted.
 */
public final class TermStartedEvent extends ApplicationEvent {
    private static final long serialVersionUID = 1L;

    private final transient Leadership leadership;

    public TermStartedEvent(FencedElectionParticipant source, Leadership leadership) {
        super(source);
        this.leadership = leadership;
    }

    /** The term: its token, path, participant id and whether it is still valid. */
    public Leadership leadership() {
        return leadership;
    }

    /** The term's fence token. */
    public long token() {
        return leadership.token();
    }

    @Override
    public String toString() {
        return "TermStartedEvent[" + leadership.path() + ", " + leadership.participantId() + ", token "
                + leadership.token() + "]";
    }
}
