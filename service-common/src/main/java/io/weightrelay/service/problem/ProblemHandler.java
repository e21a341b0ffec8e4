package io.weightrelay.service.problem;

import io.weightrelay.service.dataplane.DataplaneRedis;
import jakarta.validation.ConstraintViolationException;
import java.net.URI;
import java.util.List;
import java.util.Map;
import org.apache.tomcat.util.http.InvalidParameterException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.validation.FieldError;
import org.springframework.web.ErrorResponse;
import org.springframework.web.bind.MethodArgumentNotValidException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.context.request.WebRequest;
import org.springframework.web.method.annotation.HandlerMethodValidationException;
import org.springframework.web.method.annotation.MethodArgumentTypeMismatchException;
import org.springframework.web.multipart.MultipartException;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.exc.InvalidNullException;

/**
 * The base of each service's one exception handler. Every error leaves as {@code
 * application/problem+json} with a stable type: domain errors carry their own kind, framework
 * errors get the common kind of their status, validation errors list the offending fields, and
 * anything unexpected is logged and answered as a 500 problem without internals.
 */
public abstract class ProblemHandler extends ResponseEntityExceptionHandler {

    private static final Logger log = LoggerFactory.getLogger(ProblemHandler.class);
    private static final URI ABOUT_BLANK = URI.create("about:blank");

    /**
     * Domain errors keep their own type, detail, members and headers ({@code Retry-After}). Named
     * explicitly so that Spring also matches a RelayException that arrives as the cause of another
     * exception (a {@code CompletionException} from a pipeline stage), not only a thrown one.
     */
    @ExceptionHandler(RelayException.class)
    ResponseEntity<Object> handleRelay(RelayException ex, WebRequest request) {
        return handleExceptionInternal(
                ex, ex.getBody(), ex.getHeaders(), ex.getStatusCode(), request);
    }

    @ExceptionHandler(ConstraintViolationException.class)
    ResponseEntity<Object> handleConstraintViolation(
            ConstraintViolationException ex, WebRequest request) {
        ProblemDetail body =
                ProblemDetail.forStatusAndDetail(
                        CommonProblems.INVALID_REQUEST.status(), "request violates constraints");
        body.setProperty(
                "errors",
                ex.getConstraintViolations().stream()
                        .map(
                                v ->
                                        fieldError(
                                                lastNode(v.getPropertyPath().toString()),
                                                v.getMessage()))
                        .toList());
        return answer(ex, CommonProblems.INVALID_REQUEST, body, request);
    }

    @ExceptionHandler(MethodArgumentTypeMismatchException.class)
    ResponseEntity<Object> handleTypeMismatch(
            MethodArgumentTypeMismatchException ex, WebRequest request) {
        return answer(
                ex,
                CommonProblems.INVALID_REQUEST,
                "parameter '" + ex.getName() + "' has an invalid value",
                request);
    }

    /**
     * A query string or form body the container cannot parse (a {@code &=&} chunk, bad
     * percent-encoding, too many parameters), which Tomcat reports only when a controller first
     * reads a parameter. The detail never repeats the request, which may be what an attacker chose.
     */
    @ExceptionHandler(InvalidParameterException.class)
    ResponseEntity<Object> handleInvalidParameters(
            InvalidParameterException ex, WebRequest request) {
        int status = ex.getErrorCode() >= 400 ? ex.getErrorCode() : 400;
        return answer(
                ex,
                CommonProblems.forStatus(status),
                "the request's parameters cannot be parsed (a malformed query string or form"
                        + " body)",
                request);
    }

    /**
     * A request that declares a multipart body Spring cannot parse (no boundary, a broken part): no
     * operation of these services takes multipart, so it is the client's error, not the service's.
     */
    @ExceptionHandler(MultipartException.class)
    ResponseEntity<Object> handleMultipart(MultipartException ex, WebRequest request) {
        return answer(
                ex,
                CommonProblems.INVALID_REQUEST,
                "the request declares a multipart body that cannot be parsed; no operation here"
                        + " takes multipart",
                request);
    }

    /**
     * Anything unexpected is a 500, but for a data plane that could not reach its Redis: that is a
     * 503 {@code unavailable} naming the Redis ({@link DataplaneRedis}), so the caller, and the
     * log, read what is missing, and a retry succeeds once Redis answers.
     */
    @ExceptionHandler(Exception.class)
    ResponseEntity<Object> handleUnexpected(Exception ex, WebRequest request) {
        var unreachable = DataplaneRedis.unreachable(ex);
        if (unreachable.isPresent()) {
            String sentence = unreachable.get().sentence();
            log.warn("{} (on {})", sentence, request.getDescription(false));
            HttpHeaders headers = new HttpHeaders();
            headers.set(HttpHeaders.RETRY_AFTER, "1");
            ProblemDetail body =
                    ProblemDetail.forStatusAndDetail(
                            CommonProblems.UNAVAILABLE.status(), sentence + "; retry shortly");
            body.setType(CommonProblems.UNAVAILABLE.type());
            body.setTitle(CommonProblems.UNAVAILABLE.title());
            return handleExceptionInternal(
                    ex, body, headers, CommonProblems.UNAVAILABLE.status(), request);
        }
        log.error("unexpected error on {}", request.getDescription(false), ex);
        return answer(
                ex,
                CommonProblems.INTERNAL_ERROR,
                "unexpected " + ex.getClass().getSimpleName() + "; see the service log",
                request);
    }

    /**
     * A body Jackson refused because an array item or map value is {@code null} (no schema of the
     * contracts allows one) names where, as a JSON path ({@code workers[0].buffers[1]}), in the
     * detail and in {@code errors}; any other unreadable body is Spring's answer.
     */
    @Override
    protected ResponseEntity<Object> handleHttpMessageNotReadable(
            HttpMessageNotReadableException ex,
            HttpHeaders headers,
            HttpStatusCode status,
            WebRequest request) {
        if (ex.getMostSpecificCause() instanceof InvalidNullException nulled) {
            String path = jsonPath(nulled.getPath());
            ProblemDetail body =
                    ProblemDetail.forStatusAndDetail(
                            status,
                            path + " is null: the contract allows no null item or value there");
            body.setProperty("errors", List.of(fieldError(path, "must not be null")));
            return handleExceptionInternal(ex, body, headers, status, request);
        }
        return super.handleHttpMessageNotReadable(ex, headers, status, request);
    }

    /** {@code workers[0].buffers[1]} for the references Jackson recorded on the way down. */
    static String jsonPath(List<JacksonException.Reference> references) {
        StringBuilder path = new StringBuilder();
        for (JacksonException.Reference r : references) {
            if (r.getPropertyName() != null) {
                if (!path.isEmpty()) {
                    path.append('.');
                }
                path.append(r.getPropertyName());
            } else if (r.getIndex() >= 0) {
                path.append('[').append(r.getIndex()).append(']');
            }
        }
        return path.isEmpty() ? "the body" : path.toString();
    }

    @Override
    protected ResponseEntity<Object> handleMethodArgumentNotValid(
            MethodArgumentNotValidException ex,
            HttpHeaders headers,
            HttpStatusCode status,
            WebRequest request) {
        List<Map<String, String>> errors =
                ex.getBindingResult().getFieldErrors().stream()
                        .map(e -> fieldError(e.getField(), e.getDefaultMessage()))
                        .toList();
        ProblemDetail body = withErrors(ex.getBody(), errors);
        body.setDetail("request body violates " + errors.size() + " constraint(s)");
        return handleExceptionInternal(ex, body, headers, status, request);
    }

    @Override
    protected ResponseEntity<Object> handleHandlerMethodValidationException(
            HandlerMethodValidationException ex,
            HttpHeaders headers,
            HttpStatusCode status,
            WebRequest request) {
        return handleExceptionInternal(
                ex, withErrors(ex.getBody(), parameterErrors(ex)), headers, status, request);
    }

    /**
     * The errors of each invalid parameter, named by the parameter, and a body's by the parameter
     * and its field ({@code request.planId}), so a missing member of a body is named.
     */
    private static List<Map<String, String>> parameterErrors(HandlerMethodValidationException ex) {
        return ex.getParameterValidationResults().stream()
                .flatMap(
                        r ->
                                r.getResolvableErrors().stream()
                                        .map(
                                                e -> {
                                                    String name =
                                                            r.getMethodParameter()
                                                                    .getParameterName();
                                                    return fieldError(
                                                            e instanceof FieldError f
                                                                    ? name + "." + f.getField()
                                                                    : name,
                                                            e.getDefaultMessage());
                                                }))
                .toList();
    }

    @Override
    protected ResponseEntity<Object> handleExceptionInternal(
            Exception ex,
            Object body,
            HttpHeaders headers,
            HttpStatusCode statusCode,
            WebRequest request) {
        if (body == null && ex instanceof ErrorResponse errorResponse) {
            // Spring passes no body for ErrorResponse exceptions (RelayException among them):
            // their own problem, with its stable type, is the body.
            body = errorResponse.getBody();
        }
        ProblemDetail problem =
                body instanceof ProblemDetail pd
                        ? pd
                        : ProblemDetail.forStatusAndDetail(
                                statusCode, body == null ? null : String.valueOf(body));
        if (problem.getType() == null || ABOUT_BLANK.equals(problem.getType())) {
            ProblemKind kind = CommonProblems.forStatus(statusCode.value());
            problem.setType(kind.type());
            if (problem.getTitle() == null) {
                problem.setTitle(kind.title());
            }
        }
        HttpHeaders out = new HttpHeaders();
        if (headers != null) {
            out.putAll(headers);
        }
        out.setContentType(MediaType.APPLICATION_PROBLEM_JSON);
        return super.handleExceptionInternal(ex, problem, out, statusCode, request);
    }

    /** A problem of {@code kind} with {@code detail}, for {@code ex}. */
    private ResponseEntity<Object> answer(
            Exception ex, ProblemKind kind, String detail, WebRequest request) {
        return answer(ex, kind, ProblemDetail.forStatusAndDetail(kind.status(), detail), request);
    }

    private ResponseEntity<Object> answer(
            Exception ex, ProblemKind kind, ProblemDetail body, WebRequest request) {
        return handleExceptionInternal(ex, body, new HttpHeaders(), kind.status(), request);
    }

    /** {@code body} listing {@code errors} in its {@code errors} member. */
    private static ProblemDetail withErrors(ProblemDetail body, List<Map<String, String>> errors) {
        body.setProperty("errors", errors);
        return body;
    }

    /** One member of {@code errors}: the field and what is wrong with it. */
    private static Map<String, String> fieldError(String field, Object message) {
        return Map.of("field", field, "message", String.valueOf(message));
    }

    private static String lastNode(String path) {
        int dot = path.lastIndexOf('.');
        return dot < 0 ? path : path.substring(dot + 1);
    }
}
