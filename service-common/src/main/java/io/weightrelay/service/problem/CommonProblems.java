package io.weightrelay.service.problem;

import org.springframework.http.HttpStatus;

/** Problem kinds that every service can raise. Service-specific kinds live in the services. */
public final class CommonProblems {

    public static final ProblemKind INVALID_REQUEST =
            new ProblemKind("invalid-request", HttpStatus.BAD_REQUEST, "Invalid request");
    public static final ProblemKind UNAUTHORIZED =
            new ProblemKind("unauthorized", HttpStatus.UNAUTHORIZED, "Missing or unknown token");
    public static final ProblemKind FORBIDDEN =
            new ProblemKind("forbidden", HttpStatus.FORBIDDEN, "Role not allowed");
    public static final ProblemKind IDENTITY_MISMATCH =
            new ProblemKind(
                    "identity-mismatch",
                    HttpStatus.FORBIDDEN,
                    "Credential bound to another identity");
    public static final ProblemKind NOT_FOUND =
            new ProblemKind("not-found", HttpStatus.NOT_FOUND, "Not found");
    public static final ProblemKind METHOD_NOT_ALLOWED =
            new ProblemKind(
                    "method-not-allowed", HttpStatus.METHOD_NOT_ALLOWED, "Method not allowed");
    public static final ProblemKind NOT_ACCEPTABLE =
            new ProblemKind("not-acceptable", HttpStatus.NOT_ACCEPTABLE, "Not acceptable");
    public static final ProblemKind UNSUPPORTED_MEDIA_TYPE =
            new ProblemKind(
                    "unsupported-media-type",
                    HttpStatus.UNSUPPORTED_MEDIA_TYPE,
                    "Unsupported media type");
    public static final ProblemKind PAYLOAD_TOO_LARGE =
            new ProblemKind("payload-too-large", HttpStatus.CONTENT_TOO_LARGE, "Payload too large");
    public static final ProblemKind CONFLICT =
            new ProblemKind("conflict", HttpStatus.CONFLICT, "Conflict");
    public static final ProblemKind TOO_MANY_REQUESTS =
            new ProblemKind("too-many-requests", HttpStatus.TOO_MANY_REQUESTS, "Try again later");
    public static final ProblemKind UNAVAILABLE =
            new ProblemKind(
                    "unavailable", HttpStatus.SERVICE_UNAVAILABLE, "Dependency unavailable");
    public static final ProblemKind NOT_IMPLEMENTED =
            new ProblemKind("not-implemented", HttpStatus.NOT_IMPLEMENTED, "Not implemented");
    public static final ProblemKind INTERNAL =
            new ProblemKind("internal-error", HttpStatus.INTERNAL_SERVER_ERROR, "Internal error");

    private CommonProblems() {}

    /** The kind a framework-raised error of this status maps to. */
    public static ProblemKind forStatus(int status) {
        return switch (status) {
            case 400 -> INVALID_REQUEST;
            case 401 -> UNAUTHORIZED;
            case 403 -> FORBIDDEN;
            case 404 -> NOT_FOUND;
            case 405 -> METHOD_NOT_ALLOWED;
            case 406 -> NOT_ACCEPTABLE;
            case 409 -> CONFLICT;
            case 413 -> PAYLOAD_TOO_LARGE;
            case 415 -> UNSUPPORTED_MEDIA_TYPE;
            case 429 -> TOO_MANY_REQUESTS;
            case 501 -> NOT_IMPLEMENTED;
            case 503 -> UNAVAILABLE;
            default -> status >= 500 ? INTERNAL : INVALID_REQUEST;
        };
    }
}
