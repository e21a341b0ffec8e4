package io.weightrelay.control;

import java.time.Clock;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;
import org.springframework.context.annotation.Bean;
import org.springframework.scheduling.annotation.EnableScheduling;

@SpringBootApplication
@ConfigurationPropertiesScan
@EnableScheduling
public class ControlApiApplication {

    public static void main(String[] args) {
        SpringApplication.run(ControlApiApplication.class, args);
    }

    /** Wall clock of leases, heartbeats and phase deadlines (UTC). */
    @Bean
    Clock clock() {
        return Clock.systemUTC();
    }
}
