package io.weightrelay.service.problem;

import java.util.Map;
import org.springframework.http.ProblemDetail;
import org.springframework.web.ErrorResponseException;

/**
 * A domain error that goes out as {@code application/problem+json} with the stable type of its
 * {@link ProblemKind}. Extra properties (the generation, the failing loader) go into the problem
 * body as members.
 */
public class RelayException extends ErrorResponseException {

    private final ProblemKind kind;

    public RelayException(ProblemKind kind, String detail) {
        this(kind, detail, null);
    }

    public RelayException(ProblemKind kind, String detail, Throwable cause) {
        super(kind.status(), problem(kind, detail), cause);
        this.kind = kind;
    }

    public ProblemKind kind() {
        return kind;
    }

    /** Adds a member to the problem body, for example the name of the failing object. */
    public RelayException with(String name, Object value) {
        getBody().setProperty(name, value);
        return this;
    }

    /** Adds several members to the problem body. */
    public RelayException with(Map<String, ?> properties) {
        properties.forEach(getBody()::setProperty);
        return this;
    }

    @Override
    public String getMessage() {
        return kind.title() + ": " + getBody().getDetail();
    }

    private static ProblemDetail problem(ProblemKind kind, String detail) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(kind.status(), detail);
        problem.setType(kind.type());
        problem.setTitle(kind.title());
        return problem;
    }
}
