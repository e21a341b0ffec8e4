package io.weightrelay.control.checkpoint;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * A tmpfs of a few pages mounted under the tests' temporary directory (inside the module's {@code
 * target/}), so a write past its size fails with a real {@code ENOSPC} ("No space left on device").
 * Mounting needs root, as the build's multi-host tests do; without it the test fails saying so.
 * {@link #close()} unmounts it and removes the mount point.
 */
final class TinyFilesystem implements AutoCloseable {

    private final Path path;

    private TinyFilesystem(Path path) {
        this.path = path;
    }

    static TinyFilesystem mount(long bytes) throws IOException, InterruptedException {
        Path path =
                Path.of(System.getProperty("java.io.tmpdir"))
                        .toAbsolutePath()
                        .resolve("tmpfs-" + UUID.randomUUID().toString().substring(0, 8));
        Files.createDirectories(path);
        String out = run("mount", "-t", "tmpfs", "-o", "size=" + bytes, "tmpfs", path.toString());
        if (out != null) {
            Files.delete(path);
            throw new IllegalStateException(
                    "a disk-full test mounts a tmpfs and needs root (as the build's multi-host"
                            + " tests do): mount failed: "
                            + out);
        }
        return new TinyFilesystem(path);
    }

    Path path() {
        return path;
    }

    @Override
    public void close() throws IOException, InterruptedException {
        String out = run("umount", path.toString());
        if (out != null) {
            throw new IllegalStateException("cannot unmount " + path + ": " + out);
        }
        Files.delete(path);
    }

    /** Runs a command; null when it succeeded, else what it printed. */
    private static String run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(List.of(command)).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return String.join(" ", command) + " did not finish";
        }
        return p.exitValue() == 0 ? null : output.trim() + " (exit " + p.exitValue() + ")";
    }
}
