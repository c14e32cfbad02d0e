package com.example.shop;

import dev.fencing.spring.TermEndedEvent;
import dev.fencing.spring.TermStartedEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/** Follows this instance's terms in the election at fencing.election.path. */
@Component
public class ShopLeader {
    private volatile long term; // 0: not leading

    @EventListener
    void started(TermStartedEvent event) {
        term = event.token();
    }

    @EventListener
    void ended(TermEndedEvent event) {
        term = 0;
    }

    /** The current term's fence token, or 0 when this instance does not lead. */
    public long term() {
        return term;
    }
}
