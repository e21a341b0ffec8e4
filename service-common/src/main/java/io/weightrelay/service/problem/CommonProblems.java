package io.weightrelay.service.problem;

/**
 * Problem kinds that every service can raise (statuses and titles: {@link ProblemCatalog}).
 * Service-specific kinds live in the services.
 */
public enum CommonProblems implements ProblemKind.Catalogued {
    INVALID_REQUEST,
    UNAUTHORIZED,
    FORBIDDEN,
    IDENTITY_MISMATCH,
    NOT_FOUND,
    METHOD_NOT_ALLOWED,
    NOT_ACCEPTABLE,
    UNSUPPORTED_MEDIA_TYPE,
    PAYLOAD_TOO_LARGE,
    CONFLICT,
    TOO_MANY_REQUESTS,
    UNAVAILABLE,
    NOT_IMPLEMENTED,
    INTERNAL_ERROR,
    /** Too much work in flight (the request limits): retry after {@code Retry-After}. */
    OVERLOADED,
    /** control-api, a publisher and a loader all answer it, for an unknown or no active one. */
    GENERATION_NOT_FOUND;

    /** The 500 of anything unexpected. */
    public static final ProblemKind INTERNAL = INTERNAL_ERROR;

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
            default -> status >= 500 ? INTERNAL_ERROR : INVALID_REQUEST;
        };
    }
}
