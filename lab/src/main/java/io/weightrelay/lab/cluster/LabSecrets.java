package io.weightrelay.lab.cluster;

import io.weightrelay.dataplane.DataplaneRole;
import io.weightrelay.dataplane.RoleKeys;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;

/**
 * Every credential of one lab run, as a deployment would hand them out: one token per duty
 * (trainer, operator), a loader token bound to each instance, an owner token bound to each segment,
 * the credential control-api presents to owners, and the data plane's shared secret.
 *
 * <p>They reach processes only in files that only this user can read, in a directory apart from the
 * logs (never on a command line, where {@code ps} and a logged command would show them), and {@link
 * #all()} lists them so a test can prove that no log holds one.
 */
public final class LabSecrets implements AutoCloseable {

    private static final String OWNER_ONLY = "rw-------";

    private final Path dir;
    private final Path dataplaneSecretFile;
    private final java.util.EnumMap<DataplaneDuty, Path> keyFiles =
            new java.util.EnumMap<>(DataplaneDuty.class);
    private final String trainer = token("trainer");
    private final String operator = token("operator");
    private final String ownerCall = token("owner-call");
    private final String metrics = token("metrics");
    private final Map<String, String> loaders = new LinkedHashMap<>();
    private final Map<String, String> owners = new LinkedHashMap<>();

    /**
     * Removes the directory when this JVM ends without {@link #close()} (Ctrl-C, a test run stopped
     * from outside), so no run's tokens stay behind on disk. A SIGKILL still leaves them.
     */
    private final Thread removeAtExit;

    private LabSecrets(Path dir) throws IOException {
        this.dir = dir;
        this.removeAtExit = new Thread(this::delete, "lab-secrets-cleanup");
        Runtime.getRuntime().addShutdownHook(removeAtExit);
        byte[] random = new byte[32];
        new SecureRandom().nextBytes(random);
        this.dataplaneSecretFile =
                write("dataplane.secret", HexFormat.of().formatHex(random) + "\n");
        // The deployment tooling's part: each service gets a key file with only its role keys
        // (docs/deploy.md); the secret itself stays with the lab, which opens engines of its own.
        RoleKeys all = RoleKeys.derive(dataplaneSecret());
        for (DataplaneDuty duty : DataplaneDuty.values()) {
            keyFiles.put(
                    duty, write("dataplane-" + duty.file + ".keys", all.only(duty.roles).format()));
        }
    }

    /** What a service does on the data plane, which decides the role keys it is given. */
    public enum DataplaneDuty {
        /** A publisher or storage unit owning a store segment: peer, and the roles it checks. */
        STORE_OWNER("owner", DataplaneRole.PEER, DataplaneRole.REMOVER, DataplaneRole.STORER),
        /** A client-only publisher: the storer key, nothing else. */
        STORER("storer", DataplaneRole.STORER),
        /** A loader: the peer key, nothing else. */
        LOADER("loader", DataplaneRole.PEER),
        /** control-api: the remover key, nothing else. */
        CONTROL_API("control-api", DataplaneRole.REMOVER);

        private final String file;
        private final DataplaneRole[] roles;

        DataplaneDuty(String file, DataplaneRole... roles) {
            this.file = file;
            this.roles = roles;
        }
    }

    /** The key file of a service of this duty, for {@code relay.dataplane.secret-file}. */
    public Path dataplaneKeysFile(DataplaneDuty duty) {
        return keyFiles.get(duty);
    }

    /** A fresh set of credentials in a new directory only this user can enter. */
    public static LabSecrets create(String run) throws IOException {
        return new LabSecrets(
                Files.createTempDirectory(
                        "wr-lab-secrets-" + run,
                        PosixFilePermissions.asFileAttribute(
                                PosixFilePermissions.fromString("rwx------"))));
    }

    private static String token(String role) {
        return "lab-" + role + "-" + UUID.randomUUID();
    }

    public String trainer() {
        return trainer;
    }

    public String operator() {
        return operator;
    }

    /** The scrape token every service accepts for {@code /actuator/prometheus}, and only there. */
    public String metrics() {
        return metrics;
    }

    /** The loader token bound to {@code instance} (its loader-service and its engine use it). */
    public synchronized String loader(String instance) {
        return loaders.computeIfAbsent(instance, i -> token("loader"));
    }

    /** The owner token bound to {@code segment}, which its publisher registers with. */
    public synchronized String owner(String segment) {
        return owners.computeIfAbsent(segment, s -> token("owner"));
    }

    /**
     * The file of the data plane's deployment secret: for the lab's own engines and tools that play
     * every role; services get {@link #dataplaneKeysFile} instead.
     */
    public Path dataplaneSecretFile() {
        return dataplaneSecretFile;
    }

    /** The data plane's secret (for engines the lab opens itself). */
    public byte[] dataplaneSecret() {
        try {
            return Files.readString(dataplaneSecretFile).trim().getBytes(StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * control-api's credentials: trainer and operator tokens, each instance's loader token bound to
     * that instance, each segment's owner token bound to it, and what it presents to the owners.
     */
    public Map<String, String> controlApi(
            Collection<String> instances, Collection<String> segments) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("relay.security.tokens.trainer[0]", trainer);
        p.put("relay.security.tokens.operator[0]", operator);
        p.put("relay.security.tokens.metrics[0]", metrics);
        p.put("relay.checkpoints.owner-token", ownerCall);
        int n = 0;
        for (String instance : instances) {
            bind(p, n++, "loader", instance, loader(instance));
        }
        for (String segment : segments) {
            bind(p, n++, "owner", segment, owner(segment));
        }
        return p;
    }

    private static void bind(Map<String, String> p, int n, String role, String id, String token) {
        p.put("relay.security.bound[" + n + "].role", role);
        p.put("relay.security.bound[" + n + "].identity", id);
        p.put("relay.security.bound[" + n + "].token", token);
    }

    /**
     * A publisher's credentials: the trainer token it calls control-api with, the owner token of
     * its segment, and the tokens it accepts (trainer, operator, control-api's owner credential).
     */
    public Map<String, String> publisher(String segment) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("relay.publish.control-api-token", trainer);
        p.put("relay.publish.owner-token", owner(segment));
        p.put("relay.security.tokens.trainer[0]", trainer);
        p.put("relay.security.tokens.operator[0]", operator);
        p.put("relay.security.tokens.owner[0]", ownerCall);
        p.put("relay.security.tokens.metrics[0]", metrics);
        return p;
    }

    /** A loader-service's credentials: its instance's token, both ways, and the operator's. */
    public Map<String, String> loaderService(String instance) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("relay.loader.token", loader(instance));
        p.put("relay.security.tokens.loader[0]", loader(instance));
        p.put("relay.security.tokens.operator[0]", operator);
        p.put("relay.security.tokens.metrics[0]", metrics);
        return p;
    }

    /**
     * Writes a service's secret properties to a file only this user can read and returns the
     * argument that makes a Spring Boot service read it.
     */
    public String springArg(String service, Map<String, String> properties) {
        StringBuilder text = new StringBuilder();
        properties.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        return "--spring.config.additional-location=file:" + write(service + ".properties", text);
    }

    /**
     * Writes tokens by name ({@code trainer}, {@code operator}, {@code loader.<instance>}) for a
     * lab agent, which reads them with {@link #readTokens(Path)}; returns the file.
     */
    public Path agentTokens(String agent, Map<String, String> tokens) {
        StringBuilder text = new StringBuilder();
        tokens.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        return write(agent + ".tokens", text);
    }

    /** The tokens an agent was given in {@code file}. */
    public static Map<String, String> readTokens(Path file) {
        Properties p = new Properties();
        try (var in = Files.newBufferedReader(file)) {
            p.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the tokens in " + file, e);
        }
        Map<String, String> out = new LinkedHashMap<>();
        p.stringPropertyNames().forEach(k -> out.put(k, p.getProperty(k)));
        return out;
    }

    /** Every token and secret of this run: none may appear in a log. */
    public synchronized List<String> all() {
        List<String> all = new ArrayList<>(List.of(trainer, operator, ownerCall, metrics));
        all.addAll(loaders.values());
        all.addAll(owners.values());
        all.add(new String(dataplaneSecret(), StandardCharsets.US_ASCII));
        return all;
    }

    /**
     * The {@code .log} files under {@code logs} that hold one of {@code secrets}, each named with
     * the first characters of the secret it holds (never the whole secret).
     */
    public static List<String> foundIn(Path logs, List<String> secrets) {
        List<String> found = new ArrayList<>();
        try (var files = Files.walk(logs)) {
            for (Path log : files.filter(f -> f.toString().endsWith(".log")).toList()) {
                String text = Files.readString(log, StandardCharsets.UTF_8);
                for (String secret : secrets) {
                    if (text.contains(secret)) {
                        found.add(
                                log
                                        + " holds "
                                        + secret.substring(0, Math.min(9, secret.length()))
                                        + "...");
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot scan the logs in " + logs, e);
        }
        return found;
    }

    private Path write(String name, CharSequence text) {
        Path file = dir.resolve(name);
        try {
            Files.deleteIfExists(file);
            Files.createFile(
                    file,
                    PosixFilePermissions.asFileAttribute(
                            PosixFilePermissions.fromString(OWNER_ONLY)));
            Files.writeString(file, text);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        return file;
    }

    /** Deletes every file written and the directory. */
    @Override
    public void close() {
        try {
            Runtime.getRuntime().removeShutdownHook(removeAtExit);
        } catch (IllegalStateException shuttingDown) {
            // the hook runs (or ran) anyway
        }
        delete();
    }

    private void delete() {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (var files = Files.list(dir)) {
            for (Path f : files.toList()) {
                Files.deleteIfExists(f);
            }
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            System.err.println("could not delete " + dir + ": " + e);
        }
    }
}
