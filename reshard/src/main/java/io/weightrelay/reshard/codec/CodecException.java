package io.weightrelay.reshard.codec;

/** Thrown when bytes are not a valid canonical encoding. */
public final class CodecException extends RuntimeException {
    public CodecException(String message) {
        super(message);
    }
}
