package dev.fencing.harness;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class EventBoardTest {
    @Test
    void awaitSeesOnlyEventsAfterItsMarkIncludingOnesAddedWhileItWaits() throws Exception {
        EventBoard<String> board = new EventBoard<>(10);
        board.add("WRITTEN r1 3");
        long mark = board.mark();

        CompletableFuture<Void> later = CompletableFuture.runAsync(() -> board.add("WRITTEN r1 4"));
        String found = board.await(mark, e -> e.startsWith("WRITTEN r1"), Duration.ofSeconds(10))
                .orElseThrow();
        later.join();

        assertThat(found).isEqualTo("WRITTEN r1 4");
        assertThat(board.find(board.mark(), e -> true)).isEmpty();
    }

    @Test
    void holdsItsCapacityOfTheLatestEventsAndCountsThemAll() {
        EventBoard<Integer> board = new EventBoard<>(2);

        for (int i = 1; i <= 5; i++) {
            board.add(i);
        }

        assertThat(board.recent()).containsExactly(4, 5);
        assertThat(board.total()).isEqualTo(5);
        assertThat(board.find(0, e -> e == 1)).isEmpty();
    }
}
