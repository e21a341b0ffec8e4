package io.weightrelay.service.web;

import io.weightrelay.service.problem.CommonProblems;
import java.io.IOException;
import java.io.Writer;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.core.StandardHost;
import org.apache.catalina.valves.ErrorReportValve;
import org.springframework.boot.tomcat.servlet.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import tools.jackson.databind.json.JsonMapper;

/**
 * Writes the errors that Tomcat raises itself, before any filter or controller sees the request (an
 * encoded slash or a NUL in the path, bad percent-encoding, headers over the size limit, a
 * malformed request line), as {@code application/problem+json} of the common kind of their status
 * instead of Tomcat's HTML page. Errors Spring handled already have a body and are left alone. The
 * detail never repeats the request, which may be what an attacker chose.
 */
public class ProblemErrorReportValve extends ErrorReportValve {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Override
    protected void report(Request request, Response response, Throwable throwable) {
        int status = response.getStatus();
        if (status < 400 || response.getContentWritten() > 0 || !response.setErrorReported()) {
            return;
        }
        String body =
                JSON.writeValueAsString(
                        CommonProblems.forStatus(status).members(status, detail(status)));
        try {
            response.setContentType("application/problem+json");
            response.setCharacterEncoding("UTF-8");
            Writer writer = response.getReporter();
            if (writer != null) {
                writer.write(body);
                response.finishResponse();
            }
        } catch (IOException | IllegalStateException e) {
            // The client is gone or the response was committed: nothing more can be said.
        }
    }

    /** What went wrong, by status, in words that hold no byte of the request. */
    static String detail(int status) {
        return switch (status) {
            case 400 ->
                    "the request was refused before it reached the service: its request line,"
                            + " path or headers are malformed (an encoded slash or backslash, a NUL"
                            + " or a bad percent-encoding in the path, or an invalid header)";
            case 413 -> "the request body is larger than this service accepts";
            case 414 -> "the request line is longer than this service accepts";
            case 431 -> "the request headers are larger than this service accepts";
            case 505 -> "the HTTP version is not supported";
            default -> "the request was refused before it reached the service";
        };
    }

    /** Makes this valve the error reporter of the embedded Tomcat's host. */
    public static final class Installer
            implements WebServerFactoryCustomizer<TomcatServletWebServerFactory> {

        @Override
        public void customize(TomcatServletWebServerFactory factory) {
            factory.addContextCustomizers(
                    context -> {
                        if (context.getParent() instanceof StandardHost host) {
                            host.setErrorReportValveClass(ProblemErrorReportValve.class.getName());
                        }
                    });
        }
    }
}
