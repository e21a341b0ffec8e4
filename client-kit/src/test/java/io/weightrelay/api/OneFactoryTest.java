package io.weightrelay.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * No source of the tree outside this module builds a generated client by hand: every one comes from
 * {@link RelayClients}, so a client's token, timeouts, failover and compression are set in one
 * place. Reads the Java sources of the sibling modules (generated code lives under {@code target/},
 * which is not read).
 */
class OneFactoryTest {

    private static final Pattern HAND_BUILT =
            Pattern.compile("new\\s+(?:[\\w.]+\\.)?ApiClient\\s*\\(");

    @Test
    void noModuleButTheKitBuildsAGeneratedClient() throws IOException {
        Path kit = Path.of("").toAbsolutePath();
        Path root = kit.getParent();
        assertThat(root.resolve("openapi/src/main/openapi/control-api.yaml"))
                .as("the tree's root, above client-kit")
                .exists();
        List<String> handBuilt = new ArrayList<>();
        Files.walkFileTree(
                root,
                new SimpleFileVisitor<>() {
                    @Override
                    public FileVisitResult preVisitDirectory(
                            Path dir, BasicFileAttributes attributes) {
                        String name = dir.getFileName() == null ? "" : dir.getFileName().toString();
                        boolean skipped =
                                dir.equals(kit)
                                        || name.equals("target")
                                        || name.equals("node_modules")
                                        || (name.startsWith(".") && !dir.equals(root));
                        return skipped ? FileVisitResult.SKIP_SUBTREE : FileVisitResult.CONTINUE;
                    }

                    @Override
                    public FileVisitResult visitFile(Path file, BasicFileAttributes attributes)
                            throws IOException {
                        if (file.toString().endsWith(".java")
                                && HAND_BUILT.matcher(Files.readString(file)).find()) {
                            handBuilt.add(root.relativize(file).toString());
                        }
                        return FileVisitResult.CONTINUE;
                    }
                });
        assertThat(handBuilt).as("sources that build an ApiClient by hand").isEmpty();
    }
}
