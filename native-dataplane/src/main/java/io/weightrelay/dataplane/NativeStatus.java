package io.weightrelay.dataplane;

import io.weightrelay.dataplane.internal.DpNative;
import java.util.function.ToIntFunction;

/**
 * The outcome of one native call, read from its {@code dp_status}: the code and, on failure, the
 * engine's message naming what failed (the segment and its owner, the name, the range).
 */
record NativeStatus(int code, String message) {

    /** Runs {@code call} with a fresh {@code dp_status} and returns what it reported. */
    static NativeStatus of(ToIntFunction<DpNative.dp_status> call) {
        DpNative.dp_status status = DpNative.dp_status_new();
        if (status == null || status.isNull()) {
            throw new DataplaneException(DataplaneError.INTERNAL, "no memory for a native status");
        }
        try {
            int code = call.applyAsInt(status);
            return new NativeStatus(code, code != 0 ? DpNative.dp_status_message(status) : "");
        } finally {
            DpNative.dp_status_delete(status);
        }
    }

    /**
     * Whether the call failed: anything but {@code DP_OK} (0). A positive code from a call that
     * reports an outcome (never {@code DP_PENDING} there) is no success either, and fails as {@link
     * DataplaneError#INTERNAL}.
     */
    boolean failed() {
        return code != 0;
    }

    boolean is(DataplaneError error) {
        return code == error.code();
    }

    DataplaneError error() {
        return DataplaneError.fromCode(code);
    }

    /** Throws the exception of a failure; {@code subject} names the segment or key it is about. */
    void check(String subject) {
        if (failed()) {
            throw Errors.of(this, subject);
        }
    }
}
