package io.weightrelay.service.web;

import io.weightrelay.service.problem.CommonProblems;
import io.weightrelay.service.problem.ProblemKind;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import java.net.URISyntaxException;
import org.springframework.boot.webmvc.error.ErrorController;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The error page of every service: what reaches the servlet container's error dispatch instead of
 * Spring's exception handler (a {@code TRACE}, which Tomcat refuses with 405 before any servlet; a
 * {@code sendError} from a filter) is answered as {@code application/problem+json} of the common
 * kind of its status, in place of Spring Boot's JSON error body. Like {@link
 * ProblemErrorReportValve}, the detail never repeats the request. Requested directly (no error
 * status), it is 404.
 */
@RestController
public class ProblemErrorController implements ErrorController {

    @RequestMapping("${server.error.path:${error.path:/error}}")
    public ResponseEntity<ProblemDetail> error(HttpServletRequest request) {
        Object code = request.getAttribute(RequestDispatcher.ERROR_STATUS_CODE);
        int status = code instanceof Integer i && i >= 400 ? i : 404;
        ProblemKind kind = CommonProblems.forStatus(status);
        ProblemDetail body = ProblemDetail.forStatus(status);
        body.setType(kind.type());
        body.setTitle(kind.title());
        body.setDetail(detail(status));
        if (request.getAttribute(RequestDispatcher.ERROR_REQUEST_URI) instanceof String uri) {
            try {
                body.setInstance(new URI(uri));
            } catch (URISyntaxException notAUri) {
                // the path the container took is no URI: the problem names none
            }
        }
        return ResponseEntity.status(status)
                .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .body(body);
    }

    /** What went wrong, by status, in words that hold no byte of the request. */
    static String detail(int status) {
        return switch (status) {
            case 404 -> "no resource here";
            case 405 -> "this method is not allowed here";
            default -> ProblemErrorReportValve.detail(status);
        };
    }
}
