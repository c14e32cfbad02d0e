package com.example.shop;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * A Spring Boot service on the toolkit's starter, built with Spring Boot's own dependency management: a locked
 * method ({@link Reservations}), a scheduled job that skips while another instance runs it ({@link StockAudit}),
 * and a leader election ({@link ShopLeader}).
 */
@SpringBootApplication
@EnableScheduling
public class ShopApplication {

    public static void main(String[] args) {
        SpringApplication.run(ShopApplication.class, args);
    }
}
