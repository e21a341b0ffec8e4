package io.weightrelay.service.problem;

import io.weightrelay.api.RemoteProblem;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.springframework.http.HttpStatus;

/**
 * One kind of error: a stable {@code type} URI, its HTTP status and a short human title. The type
 * never depends on the request URL, so clients can switch on it.
 *
 * <p>Every kind the services raise is a constant of a {@link Catalogued} enum ({@link
 * CommonProblems}, and one per service area: {@code GenerationProblems}, {@code PublishProblems},
 * ...) whose status and title are a row of the one {@link ProblemCatalog table}; {@link #of} is
 * only for a kind that is not ours, such as another service's problem passed on.
 */
public interface ProblemKind {

    /** Every problem type lives under this base (the contracts', which clients decode). */
    String TYPE_BASE = RemoteProblem.TYPE_BASE;

    /** The last segment of {@link #type()}, kebab-case: {@code generation-not-found}. */
    String slug();

    HttpStatus status();

    String title();

    default URI type() {
        return URI.create(TYPE_BASE + slug());
    }

    /** An exception of this kind with the given detail. */
    default RelayException exception(String detail) {
        return new RelayException(this, detail);
    }

    /** An exception of this kind with the given detail and cause. */
    default RelayException exception(String detail, Throwable cause) {
        return new RelayException(this, detail, cause);
    }

    /**
     * The members of a problem+json body of this kind, in order, for code that writes the body
     * itself (a filter, the container's error valve).
     */
    default Map<String, Object> members(int status, String detail) {
        Map<String, Object> members = new LinkedHashMap<>();
        members.put("type", type().toString());
        members.put("title", title());
        members.put("status", status);
        members.put("detail", detail);
        return members;
    }

    /** A kind that is not in the catalog, for example a remote service's problem passed on. */
    static ProblemKind of(String slug, HttpStatus status, String title) {
        return new Defined(slug, status, title);
    }

    /**
     * A kind named by an enum constant: {@code GENERATION_NOT_FOUND} is the slug {@code
     * generation-not-found}, whose status and title are its row in {@link ProblemCatalog}.
     */
    interface Catalogued extends ProblemKind {

        /** The enum constant's name. */
        String name();

        @Override
        default String slug() {
            return ProblemCatalog.slugOf(name());
        }

        @Override
        default HttpStatus status() {
            return ProblemCatalog.kind(slug()).status();
        }

        @Override
        default String title() {
            return ProblemCatalog.kind(slug()).title();
        }
    }

    /** A kind given by its three values. */
    record Defined(String slug, HttpStatus status, String title) implements ProblemKind {

        public Defined {
            Objects.requireNonNull(slug, "slug");
            Objects.requireNonNull(status, "status");
            Objects.requireNonNull(title, "title");
            if (!slug.matches("[a-z0-9]+(-[a-z0-9]+)*")) {
                throw new IllegalArgumentException("problem slug must be kebab-case: " + slug);
            }
        }
    }
}
