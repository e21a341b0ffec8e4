package io.weightrelay.service.problem;

import java.net.URI;
import java.util.Objects;
import org.springframework.http.HttpStatus;

/**
 * One kind of error: a stable {@code type} URI, its HTTP status and a short human title. The type
 * never depends on the request URL, so clients can switch on it.
 */
public record ProblemKind(String slug, HttpStatus status, String title) {

    /** Every problem type lives under this base. */
    public static final String TYPE_BASE = "https://weightrelay.io/problems/";

    public ProblemKind {
        Objects.requireNonNull(slug, "slug");
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(title, "title");
        if (!slug.matches("[a-z0-9]+(-[a-z0-9]+)*")) {
            throw new IllegalArgumentException("problem slug must be kebab-case: " + slug);
        }
    }

    public URI type() {
        return URI.create(TYPE_BASE + slug);
    }

    /** An exception of this kind with the given detail. */
    public RelayException exception(String detail) {
        return new RelayException(this, detail);
    }

    /** An exception of this kind with the given detail and cause. */
    public RelayException exception(String detail, Throwable cause) {
        return new RelayException(this, detail, cause);
    }
}
