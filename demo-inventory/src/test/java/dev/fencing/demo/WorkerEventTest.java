package dev.fencing.demo;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class WorkerEventTest {

    @Test
    void aLineParsesBackToTheSameEventWithTheCoordinatorsWorkerNumber() {
        WorkerEvent event = new WorkerEvent(1_700_000_000_123L, 0, WorkerEvent.Kind.REJECTED, "sku-2", 41, 44, 0);

        assertThat(WorkerEvent.parse(event.toLine(), 3))
                .contains(new WorkerEvent(1_700_000_000_123L, 3, WorkerEvent.Kind.REJECTED, "sku-2", 41, 44, 0));
    }

    @Test
    void linesThatAreNotEventsAreIgnored() {
        assertThat(WorkerEvent.parse("Exception in thread main", 1)).isEmpty();
        assertThat(WorkerEvent.parse("EVENT\t1\tNO_SUCH_KIND\tsku-1\t1\t0\t0", 1))
                .isEmpty();
        assertThat(WorkerEvent.parse("EVENT\t1\tLOCKED\tsku-1", 1)).isEmpty();
        assertThat(WorkerEvent.parse(null, 1)).isEmpty();
    }

    @Test
    void tabsAndNewlinesInAFailureMessageCannotBreakTheLine() {
        WorkerEvent failed = new WorkerEvent(5, 0, WorkerEvent.Kind.FAILED, "boom\tat\nline", 0, 0, 0);

        assertThat(WorkerEvent.parse(failed.toLine(), 1)).map(WorkerEvent::sku).contains("boom at line");
    }
}
