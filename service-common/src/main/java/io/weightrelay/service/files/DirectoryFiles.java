package io.weightrelay.service.files;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The two rules control-api and the publishers share for a checkpoint directory: a file a manifest
 * names must stay inside the directory (it comes from a stored document, so it is checked before it
 * is opened), and a file written there is durable only once the directory entry is too.
 */
public final class DirectoryFiles {
    private DirectoryFiles() {}

    /**
     * Whether {@code file} is a relative name that stays inside its directory: not empty, not
     * absolute, with no empty, {@code .} or {@code ..} element.
     */
    public static boolean staysInside(String file) {
        if (file == null || file.isEmpty() || file.startsWith("/")) {
            return false;
        }
        for (String element : file.split("/", -1)) {
            if (element.isEmpty() || element.equals(".") || element.equals("..")) {
                return false;
            }
        }
        return true;
    }

    /** Makes the entries of {@code directory} durable (a new or renamed file in it, say). */
    public static void sync(Path directory) throws IOException {
        try (FileChannel d = FileChannel.open(directory, StandardOpenOption.READ)) {
            d.force(true);
        }
    }
}
