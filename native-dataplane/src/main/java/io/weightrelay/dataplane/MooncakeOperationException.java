package io.weightrelay.dataplane;

import java.util.Map;

/**
 * A Mooncake call failed inside the agent: {@link #op()} the agent command, {@link #code()}
 * Mooncake's error code ({@link #codeName()} its {@code ErrorCode} name, such as {@code
 * OBJECT_HAS_LEASE}), {@link #subject()} the key or target it concerned when there is one.
 */
public final class MooncakeOperationException extends MooncakeAgentException {
    private static final long serialVersionUID = 1L;

    /** Mooncake's codes ({@code mooncake-store/include/types.h}) that have a data-plane twin. */
    private static final Map<Integer, DataplaneError> ERRORS =
            Map.of(
                    -704, DataplaneError.NOT_FOUND,
                    -705, DataplaneError.EXISTS,
                    -200, DataplaneError.SEGMENT_FULL,
                    -10, DataplaneError.SEGMENT_FULL,
                    -101, DataplaneError.UNKNOWN_SEGMENT,
                    -600, DataplaneError.INVALID_ARGUMENT,
                    -800, DataplaneError.PEER_GONE);

    private final String op;
    private final int code;
    private final String codeName;
    private final String key;

    public MooncakeOperationException(
            String op, int code, String codeName, String subject, String message) {
        super(ERRORS.getOrDefault(code, DataplaneError.IO), "MooncakeOperationError", message);
        this.op = op;
        this.code = code;
        this.codeName = codeName;
        this.key = subject;
    }

    public String op() {
        return op;
    }

    public int code() {
        return code;
    }

    public String codeName() {
        return codeName;
    }

    /** The key or target the failed call concerned, or null. */
    public String key() {
        return key;
    }
}
