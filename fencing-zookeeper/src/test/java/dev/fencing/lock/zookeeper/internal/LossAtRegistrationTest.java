package dev.fencing.lock.zookeeper.internal;

import static dev.fencing.lock.zookeeper.internal.LockRegistry.lossAtRegistration;
import static org.assertj.core.api.Assertions.assertThat;

import dev.fencing.lock.LeaseLoss;
import org.junit.jupiter.api.Test;

class LossAtRegistrationTest {
    private static final long SESSION = 0x1234L;

    @Test
    void anUndisturbedGrantOfTheCurrentSessionIsValid() {
        assertThat(lossAtRegistration(false, false, 3, 3, LeaseLoss.SESSION_LOST, 7, 7, SESSION, SESSION))
                .isNull();
    }

    @Test
    void aDisruptionSinceTheCreateInvalidatesWithItsCause() {
        assertThat(lossAtRegistration(false, false, 3, 4, LeaseLoss.CONNECTION_SUSPENDED, 7, 7, SESSION, SESSION))
                .isEqualTo(LeaseLoss.CONNECTION_SUSPENDED);
        assertThat(lossAtRegistration(false, false, 3, 5, LeaseLoss.SESSION_LOST, 7, 7, SESSION, SESSION))
                .isEqualTo(LeaseLoss.SESSION_LOST);
    }

    @Test
    void aNodeOwnedByAnotherSessionThanTheClientsIsLostEvenBeforeCuratorSaysSo() {
        assertThat(lossAtRegistration(false, false, 3, 3, LeaseLoss.CONNECTION_SUSPENDED, 7, 7, SESSION, SESSION + 1))
                .isEqualTo(LeaseLoss.SESSION_LOST);
        assertThat(lossAtRegistration(false, false, 3, 3, LeaseLoss.CONNECTION_SUSPENDED, 7, 7, 0, 0))
                .as("no session known")
                .isEqualTo(LeaseLoss.SESSION_LOST);
    }

    @Test
    void aNodeCreatedBeforeCuratorReplacedItsHandleIsLostEvenWhileTheSessionIdsStillMatch() {
        assertThat(lossAtRegistration(false, false, 3, 3, LeaseLoss.CONNECTION_SUSPENDED, 7, 8, SESSION, SESSION))
                .isEqualTo(LeaseLoss.SESSION_LOST);
    }

    @Test
    void aPauseThatTheDetectorHasNotCountedYetStillCounts() {
        assertThat(lossAtRegistration(false, true, 3, 3, LeaseLoss.SESSION_LOST, 7, 7, SESSION, SESSION))
                .isEqualTo(LeaseLoss.PAUSE_DETECTED);
    }

    @Test
    void closedLocksGiveTheirOwnCauseFirst() {
        assertThat(lossAtRegistration(true, true, 3, 4, LeaseLoss.SESSION_LOST, 7, 7, SESSION, SESSION + 1))
                .isEqualTo(LeaseLoss.LOCKS_CLOSED);
    }
}
