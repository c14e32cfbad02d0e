package com.example.reservations;

import dev.fencing.kafka.TransactionalRecordHandler;
import org.jdbi.v3.core.Handle;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * The smallest Spring Boot service on the toolkit: its properties are in {@code application.properties},
 * its one locked method in {@link Reservations}, and its one fenced consumer is the handler below.
 */
@SpringBootApplication
public class ReservationService {

    public static void main(String[] args) {
        SpringApplication.run(ReservationService.class, args);
    }

    /** Applies reservation events to a log table, in the transaction that also raises the SKU's watermark. */
    @Bean
    TransactionalRecordHandler<Handle, String, String> reservationLog() {
        return (handle, record, token) -> handle.execute(
                "INSERT INTO reservation_log (sku, token, event) VALUES (?, ?, ?)",
                record.key(),
                token,
                record.value());
    }
}
