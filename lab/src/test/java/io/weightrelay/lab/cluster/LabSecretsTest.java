package io.weightrelay.lab.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.weightrelay.lab.TestJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LabSecretsTest {

    @Test
    void credentialsLiveInFilesOnlyThisUserCanReadAndCloseRemovesThem() throws Exception {
        Path dir;
        try (LabSecrets secrets = LabSecrets.create("t" + ProcessHandle.current().pid())) {
            String arg = secrets.springArg("loader-i0", secrets.loaderService("i0"));
            Path file = Path.of(arg.substring(arg.indexOf("file:") + "file:".length()));
            dir = file.getParent();
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)))
                    .isEqualTo("rwx------");
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file)))
                    .isEqualTo("rw-------");
            assertThat(Files.readString(file)).contains(secrets.loader("i0"));
            assertThat(secrets.all()).contains(secrets.loader("i0"), secrets.trainer());
        }
        assertThat(dir).doesNotExist();
    }

    /** A lab process that ends without closing its secrets (Ctrl-C, a stopped test run). */
    public static final class Leaver {
        public static void main(String[] args) throws Exception {
            LabSecrets secrets = LabSecrets.create("leaver");
            Files.writeString(Path.of(args[0]), secrets.dataplaneSecretFile().getParent() + "\n");
            System.exit(0);
        }
    }

    @Test
    void aProcessThatEndsWithoutClosingLeavesNoTokensBehind(@TempDir Path tmp) throws Exception {
        Path marker = tmp.resolve("dir");
        Process p =
                new ProcessBuilder(TestJvm.command("64m", Leaver.class, marker.toString()))
                        .inheritIO()
                        .start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).isZero();
        Path dir = Path.of(Files.readString(marker).strip());
        assertThat(dir.getFileName().toString()).startsWith("wr-lab-secrets-leaver");
        assertThat(dir).doesNotExist();
    }

    @Test
    void aLogHoldingATokenIsFound(@TempDir Path logs) throws Exception {
        try (LabSecrets secrets = LabSecrets.create("scan")) {
            Files.writeString(logs.resolve("a.log"), "nothing here\n");
            Files.writeString(logs.resolve("b.log"), "oops " + secrets.owner("seg-0") + "\n");
            List<String> found = LabSecrets.foundIn(logs, secrets.all());
            assertThat(found).singleElement().asString().contains("b.log");
            assertThat(found.get(0))
                    .as("never the whole secret")
                    .doesNotContain(secrets.owner("seg-0"));
            assertThat(LabSecrets.foundIn(logs, List.of("absent"))).isEmpty();
        }
    }
}
