package io.weightrelay.control;

import java.time.Clock;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.scheduling.annotation.EnableScheduling;

@SpringBootApplication
@ConfigurationPropertiesScan
// Named too, so that slice tests (which scan no properties) get the clock bean's properties
@EnableConfigurationProperties(ClockProperties.class)
@EnableScheduling
public class ControlApiApplication {

    public static void main(String[] args) {
        SpringApplication.run(ControlApiApplication.class, args);
    }

    /**
     * This process's clock (UTC), for its own waits only, offset by {@code relay.clock.skew} (a
     * fault-injection knob). Leases, heartbeats and phase deadlines run on the Redis server's
     * clock.
     */
    @Bean
    Clock clock(ClockProperties properties) {
        Clock system = Clock.systemUTC();
        return properties.skew().isZero() ? system : Clock.offset(system, properties.skew());
    }
}
