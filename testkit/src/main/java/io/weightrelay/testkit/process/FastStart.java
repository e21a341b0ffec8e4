package io.weightrelay.testkit.process;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * How a service's executable jar is started quickly: from the jar's extracted layout (Spring Boot's
 * {@code -Djarmode=tools extract}: the application jar with its dependencies beside it in {@code
 * lib/}, loaded by the JVM's own class loader instead of the nested-jar loader) with a class data
 * sharing archive made by one training start of it ({@code -XX:ArchiveClassesAtExit} with {@code
 * -Dspring.context.exit=onRefresh}). Measured on a 2-core machine: a loader's start takes 2.4 CPU
 * seconds instead of 5.2, control-api's 2.6 instead of 6.1, and a lab starts seven such JVMs at
 * once (and restarts them in its fault cases).
 *
 * <p>The layout lives beside the jar ({@code <jar's directory>/fast-start/<jar>-<size>-<mtime>/}),
 * so a rebuilt jar gets a new one; it is made once per jar, under a file lock that other processes
 * (a bench beside a test) honour too. The training start binds no fixed port, reaches no Redis of
 * the machine (one of its own, or an unused loopback port) and makes its shared memory in the
 * layout's {@code tmp/}, removed after it: nothing of it outlives it. Anything that goes wrong
 * falls back, said once on stderr: no archive (the extracted layout alone), or the plain {@code
 * -jar}. An archive the JVM cannot use (another JDK) is ignored by the JVM itself ({@code
 * -Xshare:auto}). {@code -Drelay.service.fast-start=false} turns it off.
 */
public final class FastStart {

    /** The system property that turns fast starts off ({@code false}). */
    public static final String PROPERTY = "relay.service.fast-start";

    private static final String READY = "ready";
    private static final String ARCHIVE = "app.jsa";
    private static final long TRAINING_SECONDS = 180;

    private static final Map<Path, List<String>> PREPARED = new ConcurrentHashMap<>();

    private FastStart() {}

    /**
     * The JVM arguments that start {@code jar}: {@code -XX:SharedArchiveFile=<archive> -jar
     * <extracted jar>} once its layout is ready (made now if not), else {@code -jar <jar>}.
     */
    public static List<String> jarArgs(Path jar) {
        if (!Boolean.parseBoolean(System.getProperty(PROPERTY, "true"))) {
            return List.of("-jar", jar.toString());
        }
        Path absolute = jar.toAbsolutePath().normalize();
        Path dir;
        try {
            // keyed by the layout, which names the jar's size and time: a jar rebuilt while this
            // process runs (a long-lived lab restarting a service) gets its own
            dir = layoutDir(absolute);
        } catch (IOException e) {
            return List.of("-jar", jar.toString());
        }
        return PREPARED.computeIfAbsent(dir, d -> prepare(absolute, d));
    }

    private static List<String> prepare(Path jar, Path dir) {
        try {
            Files.createDirectories(dir.getParent());
            try (FileChannel lockFile =
                            FileChannel.open(
                                    dir.resolveSibling(dir.getFileName() + ".lock"),
                                    StandardOpenOption.CREATE,
                                    StandardOpenOption.WRITE);
                    FileLock ignored = lockFile.lock()) {
                if (!Files.exists(dir.resolve(READY))) {
                    make(jar, dir);
                }
            }
            return argsFor(jar, dir);
        } catch (IOException | UncheckedIOException e) {
            System.err.println(
                    "fast start of " + jar.getFileName() + " unavailable, plain -jar: " + e);
            return List.of("-jar", jar.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return List.of("-jar", jar.toString());
        }
    }

    /** Where {@code jar}'s layout is: named by its size and modification time. */
    static Path layoutDir(Path jar) throws IOException {
        String stem = jar.getFileName().toString().replaceFirst("\\.jar$", "");
        return jar.resolveSibling("fast-start")
                .resolve(
                        stem
                                + "-"
                                + Files.size(jar)
                                + "-"
                                + Files.getLastModifiedTime(jar).toMillis());
    }

    private static List<String> argsFor(Path jar, Path dir) throws IOException {
        String readyText = Files.readString(dir.resolve(READY)).strip();
        Path extracted = dir.resolve(jar.getFileName());
        List<String> args = new ArrayList<>();
        if (readyText.equals(ARCHIVE)) {
            args.add("-XX:SharedArchiveFile=" + dir.resolve(ARCHIVE));
        }
        args.add("-jar");
        args.add(extracted.toString());
        return List.copyOf(args);
    }

    /**
     * Extracts {@code jar} into {@code dir} and trains its archive there (the archive records the
     * class path it was made with, so it is made where it is used); {@code ready} says whether an
     * archive came out of it.
     */
    private static void make(Path jar, Path dir) throws IOException, InterruptedException {
        String stem = jar.getFileName().toString().replaceFirst("\\.jar$", "") + "-";
        try (var older = Files.list(dir.getParent())) {
            // the layouts of this jar's earlier builds (their services may still run: unlinked
            // files stay readable to them)
            Path ownLock = dir.resolveSibling(dir.getFileName() + ".lock");
            older.filter(p -> p.getFileName().toString().startsWith(stem))
                    .filter(p -> !p.equals(dir) && !p.equals(ownLock))
                    .forEach(ServiceProcess::deleteTree);
        }
        ServiceProcess.deleteTree(dir);
        Files.createDirectories(dir);
        Path log = dir.resolve("make.log");
        int extracted =
                run(
                        List.of(
                                java(),
                                "-Djarmode=tools",
                                "-jar",
                                jar.toString(),
                                "extract",
                                "--destination",
                                dir.toString(),
                                "--force"),
                        dir,
                        log);
        if (extracted != 0 || !Files.exists(dir.resolve(jar.getFileName()))) {
            throw new IOException("extracting failed (exit " + extracted + "); see " + log);
        }
        // A Redis of its own where the machine has redis-server (a publisher's data plane does not
        // start without one); else a port nobody answers on (its training then fails, and that
        // service starts from the extracted layout alone).
        int redisPort = ServiceProcess.freePort();
        Process redis = startRedis(redisPort, dir);
        int trained;
        try {
            trained = train(jar, dir, log, redisPort);
        } finally {
            if (redis != null) {
                redis.destroy();
                redis.waitFor(10, TimeUnit.SECONDS);
            }
        }
        ServiceProcess.deleteTree(dir.resolve("tmp"));
        boolean archived = trained == 0 && Files.isRegularFile(dir.resolve(ARCHIVE));
        if (!archived) {
            System.err.println(
                    "fast start of "
                            + jar.getFileName()
                            + ": no class data archive (training exit "
                            + trained
                            + "; see "
                            + log
                            + "), its extracted layout alone");
            Files.deleteIfExists(dir.resolve(ARCHIVE));
        }
        Files.writeString(dir.resolve(READY), archived ? ARCHIVE : "extracted");
    }

    /**
     * One start of the extracted jar that stops once its context is up and writes the classes it
     * loaded into the archive: on a port the kernel picks, its Redis at {@code redisPort}.
     */
    private static int train(Path jar, Path dir, Path log, int redisPort)
            throws IOException, InterruptedException {
        return run(
                List.of(
                        java(),
                        "-XX:ArchiveClassesAtExit=" + dir.resolve(ARCHIVE),
                        "-Xlog:cds=off",
                        "-Xlog:cds+dynamic=off",
                        "-Dspring.context.exit=onRefresh",
                        "-Djava.io.tmpdir=" + Files.createDirectories(dir.resolve("tmp")),
                        "-jar",
                        dir.resolve(jar.getFileName()).toString(),
                        "--server.port=0",
                        "--server.address=127.0.0.1",
                        "--spring.data.redis.host=127.0.0.1",
                        "--spring.data.redis.port=" + redisPort,
                        "--relay.dataplane.redis-uri=redis://127.0.0.1:" + redisPort,
                        // A publisher's segment (and any other shared memory a service makes)
                        // lands in the layout's tmp, removed after the training: in /dev/shm a
                        // publisher's default segment (1 GB of memory) outlived the training, and
                        // under its default name it is the segment a publisher of the machine
                        // with default settings would own. Small, since only classes matter here.
                        "--relay.dataplane.shm-dir="
                                + Files.createDirectories(dir.resolve("tmp").resolve("shm")),
                        "--relay.segment.size=16MB"),
                dir,
                log);
    }

    private static Process startRedis(int port, Path dir) {
        try {
            Process p =
                    new ProcessBuilder(
                                    "redis-server",
                                    "--port",
                                    Integer.toString(port),
                                    "--bind",
                                    "127.0.0.1",
                                    "--save",
                                    "",
                                    "--appendonly",
                                    "no")
                            .directory(dir.toFile())
                            .redirectErrorStream(true)
                            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                            .start();
            for (int i = 0; i < 50 && p.isAlive(); i++) {
                try (Socket probe = new Socket("127.0.0.1", port)) {
                    return p;
                } catch (IOException notYet) {
                    Thread.sleep(100);
                }
            }
            p.destroy();
            return null;
        } catch (IOException e) {
            return null; // no redis-server here
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private static int run(List<String> command, Path dir, Path log)
            throws IOException, InterruptedException {
        Process p =
                new ProcessBuilder(command)
                        .directory(dir.toFile())
                        .redirectErrorStream(true)
                        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                        .start();
        if (!p.waitFor(TRAINING_SECONDS, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            return -1;
        }
        return p.exitValue();
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }
}
