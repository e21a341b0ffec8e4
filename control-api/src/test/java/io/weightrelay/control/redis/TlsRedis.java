package io.weightrelay.control.redis;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.springframework.util.FileSystemUtils;

/**
 * One private redis-server that speaks only TLS, on a free loopback port, with a certificate for
 * {@code 127.0.0.1} signed by a throw-away certificate authority that openssl makes for the test
 * run. Clients need not present certificates. Killed (and its files deleted) when the JVM exits.
 */
final class TlsRedis {

    static final String PREFIX = "wr:redis-tls:";

    private static PrivateRedis redis;
    private static Path dir;

    private TlsRedis() {}

    /** The certificate authority (PEM) that signed the server's certificate. */
    static synchronized Path caCertificate() {
        started();
        return dir.resolve("ca.crt");
    }

    static synchronized PrivateRedis started() {
        if (redis == null) {
            try {
                dir = Files.createTempDirectory("control-api-redis-tls-");
                makeCertificates(dir);
            } catch (IOException ex) {
                throw new IllegalStateException("cannot make the test certificates", ex);
            }
            PrivateRedis r =
                    new PrivateRedis(
                            port ->
                                    List.of(
                                            "--port",
                                            "0",
                                            "--tls-port",
                                            String.valueOf(port),
                                            "--tls-cert-file",
                                            dir.resolve("server.crt").toString(),
                                            "--tls-key-file",
                                            dir.resolve("server.key").toString(),
                                            "--tls-ca-cert-file",
                                            dir.resolve("ca.crt").toString(),
                                            "--tls-auth-clients",
                                            "no"));
            r.start();
            Path made = dir;
            r.closeAtExit();
            Runtime.getRuntime()
                    .addShutdownHook(
                            new Thread(() -> FileSystemUtils.deleteRecursively(made.toFile())));
            redis = r;
        }
        return redis;
    }

    private static void makeCertificates(Path dir) throws IOException {
        Files.writeString(dir.resolve("san.ext"), "subjectAltName=IP:127.0.0.1\n");
        openssl(
                dir,
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=weight-relay test CA",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt");
        openssl(
                dir,
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=127.0.0.1",
                "-keyout",
                "server.key",
                "-out",
                "server.csr");
        openssl(
                dir,
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                "san.ext",
                "-out",
                "server.crt");
    }

    private static void openssl(Path dir, String... args) throws IOException {
        List<String> command = new java.util.ArrayList<>(List.of("openssl"));
        command.addAll(List.of(args));
        Process p =
                new ProcessBuilder(command)
                        .directory(dir.toFile())
                        .redirectErrorStream(true)
                        .redirectOutput(dir.resolve("openssl.log").toFile())
                        .start();
        try {
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException(
                        "openssl "
                                + args[0]
                                + " failed: "
                                + Files.readString(dir.resolve("openssl.log")));
            }
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", ex);
        }
    }
}
