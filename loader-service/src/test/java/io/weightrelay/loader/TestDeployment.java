package io.weightrelay.loader;

import java.nio.charset.StandardCharsets;

/** The data-plane secret every engine of the tests' deployment shares (without one, no tcp). */
public final class TestDeployment {
    private TestDeployment() {}

    /** A copy of the secret. */
    public static byte[] secret() {
        return "loader-service test deployment".getBytes(StandardCharsets.UTF_8);
    }
}
