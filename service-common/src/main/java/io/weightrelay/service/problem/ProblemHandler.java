package io.weightrelay.service.problem;

import jakarta.validation.ConstraintViolationException;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.ErrorResponse;
import org.springframework.web.bind.MethodArgumentNotValidException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.context.request.WebRequest;
import org.springframework.web.method.annotation.HandlerMethodValidationException;
import org.springframework.web.method.annotation.MethodArgumentTypeMismatchException;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;

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
        List<Map<String, String>> errors = new ArrayList<>();
        ex.getConstraintViolations()
                .forEach(
                        v ->
                                errors.add(
                                        Map.of(
                                                "field", lastNode(v.getPropertyPath().toString()),
                                                "message", v.getMessage())));
        body.setProperty("errors", errors);
        return handleExceptionInternal(
                ex, body, new HttpHeaders(), CommonProblems.INVALID_REQUEST.status(), request);
    }

    @ExceptionHandler(MethodArgumentTypeMismatchException.class)
    ResponseEntity<Object> handleTypeMismatch(
            MethodArgumentTypeMismatchException ex, WebRequest request) {
        ProblemDetail body =
                ProblemDetail.forStatusAndDetail(
                        CommonProblems.INVALID_REQUEST.status(),
                        "parameter '" + ex.getName() + "' has an invalid value");
        return handleExceptionInternal(
                ex, body, new HttpHeaders(), CommonProblems.INVALID_REQUEST.status(), request);
    }

    @ExceptionHandler(Exception.class)
    ResponseEntity<Object> handleUnexpected(Exception ex, WebRequest request) {
        log.error("unexpected error on {}", request.getDescription(false), ex);
        ProblemDetail body =
                ProblemDetail.forStatusAndDetail(
                        CommonProblems.INTERNAL.status(),
                        "unexpected " + ex.getClass().getSimpleName() + "; see the service log");
        return handleExceptionInternal(
                ex, body, new HttpHeaders(), CommonProblems.INTERNAL.status(), request);
    }

    @Override
    protected ResponseEntity<Object> handleMethodArgumentNotValid(
            MethodArgumentNotValidException ex,
            HttpHeaders headers,
            HttpStatusCode status,
            WebRequest request) {
        ProblemDetail body = ex.getBody();
        List<Map<String, String>> errors = new ArrayList<>();
        ex.getBindingResult()
                .getFieldErrors()
                .forEach(
                        e ->
                                errors.add(
                                        Map.of(
                                                "field",
                                                e.getField(),
                                                "message",
                                                String.valueOf(e.getDefaultMessage()))));
        body.setProperty("errors", errors);
        body.setDetail("request body violates " + errors.size() + " constraint(s)");
        return handleExceptionInternal(ex, body, headers, status, request);
    }

    @Override
    protected ResponseEntity<Object> handleHandlerMethodValidationException(
            HandlerMethodValidationException ex,
            HttpHeaders headers,
            HttpStatusCode status,
            WebRequest request) {
        ProblemDetail body = ex.getBody();
        List<Map<String, String>> errors = new ArrayList<>();
        ex.getParameterValidationResults()
                .forEach(
                        r ->
                                r.getResolvableErrors()
                                        .forEach(
                                                e ->
                                                        errors.add(
                                                                Map.of(
                                                                        "field",
                                                                        r.getMethodParameter()
                                                                                .getParameterName(),
                                                                        "message",
                                                                        String.valueOf(
                                                                                e
                                                                                        .getDefaultMessage())))));
        body.setProperty("errors", errors);
        return handleExceptionInternal(ex, body, headers, status, request);
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

    private static String lastNode(String path) {
        int dot = path.lastIndexOf('.');
        return dot < 0 ? path : path.substring(dot + 1);
    }
}
