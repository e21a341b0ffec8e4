package io.weightrelay.lab.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.weightrelay.testkit.redis.RedisTestSupport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A lab killed before its close left its Redis keys: the next lab on the same Redis deletes them,
 * and only them (not a running lab's, not another Redis's), against the real Redis.
 */
class KilledLabsTest {

    @TempDir Path tmp;

    @Test
    void theKeysOfKilledLabsGoAndRunningLabsKeepTheirs() throws Exception {
        String redis = RedisTestSupport.endpoint().uri();
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor(10, TimeUnit.SECONDS);
        String killed = "0000dead";
        String running = "0000a11e";
        String elsewhere = "0000e15e";
        Path killedLogs = Files.createDirectory(tmp.resolve("wr-lab-" + killed + "123"));
        Path runningLogs = Files.createDirectory(tmp.resolve("wr-lab-" + running + "456"));
        Path elsewhereLogs = Files.createDirectory(tmp.resolve("wr-lab-" + elsewhere + "789"));
        Files.writeString(
                killedLogs.resolve(KilledLabs.FILE), gone.pid() + " " + killed + " " + redis);
        KilledLabs.record(runningLogs, running, redis);
        Files.writeString(
                elsewhereLogs.resolve(KilledLabs.FILE),
                gone.pid() + " " + elsewhere + " redis://198.18.0.1:6379");

        RedisClient client = RedisClient.create(redis);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            RedisCommands<String, String> r = c.sync();
            for (String run : new String[] {killed, running, elsewhere}) {
                r.set("wr:lab:" + run + ":a", "1");
                r.hset("wr:lab:" + run + ":dp:seg:x", "shm", "/dev/shm/x");
            }
            try {
                assertThat(KilledLabs.sweep(tmp, redis)).containsExactly(killed);

                assertThat(r.exists("wr:lab:" + killed + ":a", "wr:lab:" + killed + ":dp:seg:x"))
                        .isZero();
                assertThat(r.exists("wr:lab:" + running + ":a")).isEqualTo(1);
                assertThat(r.exists("wr:lab:" + elsewhere + ":a")).isEqualTo(1);
                assertThat(killedLogs.resolve(KilledLabs.FILE)).doesNotExist();
                assertThat(killedLogs).exists(); // its logs stay
                assertThat(runningLogs.resolve(KilledLabs.FILE)).exists();
                assertThat(KilledLabs.sweep(tmp, redis)).isEmpty();

                KilledLabs.closed(runningLogs);
                assertThat(runningLogs.resolve(KilledLabs.FILE)).doesNotExist();
            } finally {
                for (String run : new String[] {killed, running, elsewhere}) {
                    LabStore.deleteKeys(redis, "wr:lab:" + run + ":");
                }
            }
        } finally {
            client.shutdown();
        }
    }
}
