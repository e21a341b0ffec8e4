package io.weightrelay.lab.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The Redis keys of labs that never reached their {@code close()} (a SIGKILLed or OOM-killed lab
 * JVM; its services stop by themselves, see {@code relay.parent-pid}). Each lab writes {@value
 * #FILE} into its log directory (its pid, its run and its Redis); the next lab to start on the same
 * Redis deletes the keys of every recorded lab whose JVM is gone and drops the record. The logs
 * themselves stay, as a closed lab's do.
 */
final class KilledLabs {

    /** The record a running lab keeps in its log directory. */
    static final String FILE = "lab.pid";

    private KilledLabs() {}

    /** Records the lab of {@code run} (this JVM) on {@code redisUri} in {@code logs}. */
    static void record(Path logs, String run, String redisUri) throws IOException {
        Files.writeString(
                logs.resolve(FILE),
                ProcessHandle.current().pid() + " " + run + " " + redisUri + "\n",
                StandardCharsets.UTF_8);
    }

    /** Forgets the record of a lab that closed cleanly. */
    static void closed(Path logs) {
        try {
            Files.deleteIfExists(logs.resolve(FILE));
        } catch (IOException e) {
            // a record left behind is swept at most once, harmlessly: its keys are gone
        }
    }

    /**
     * Deletes the Redis keys ({@code wr:lab:<run>:*} on {@code redisUri}) of every lab recorded
     * under {@code tmp} whose JVM is gone, and drops their records.
     *
     * @return the runs swept
     */
    static List<String> sweep(Path tmp, String redisUri) {
        List<String> swept = new ArrayList<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(tmp, "wr-lab-*")) {
            for (Path dir : dirs) {
                Path file = dir.resolve(FILE);
                Optional<String[]> record = read(file);
                if (record.isEmpty() || !record.get()[2].equals(redisUri)) {
                    continue;
                }
                long pid = Long.parseLong(record.get()[0]);
                boolean alive = ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
                if (alive) {
                    continue;
                }
                String run = record.get()[1];
                LabStore.deleteKeys(redisUri, "wr:lab:" + run + ":");
                Files.deleteIfExists(file);
                swept.add(run);
            }
        } catch (IOException e) {
            System.err.println("could not look for killed labs under " + tmp + ": " + e);
        }
        return swept;
    }

    private static Optional<String[]> read(Path file) {
        try {
            String[] fields = Files.readString(file, StandardCharsets.UTF_8).strip().split(" ");
            if (fields.length != 3 || !fields[1].matches("[0-9a-f]{8}")) {
                return Optional.empty();
            }
            Long.parseLong(fields[0]);
            return Optional.of(fields);
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
    }
}
