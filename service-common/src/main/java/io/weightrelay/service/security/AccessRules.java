package io.weightrelay.service.security;

import jakarta.servlet.http.HttpServletRequest;
import java.util.List;
import java.util.regex.Pattern;

/**
 * An {@link AccessPolicy} written as a table: health and the API docs are anonymous, the first rule
 * whose method and path match decides, other reads under {@code /api/v1/} need {@code reads}, and
 * anything else needs {@code fallback}. Services subclass it with their table; immutable and thread
 * safe.
 */
public class AccessRules implements AccessPolicy {

    /** A method and a path pattern (a regular expression over the whole path), and who may. */
    public record Rule(String method, Pattern path, Access access) {}

    private final Access reads;
    private final Access fallback;
    private final List<Rule> rules;

    protected AccessRules(Access reads, Access fallback, Rule... rules) {
        this.reads = reads;
        this.fallback = fallback;
        this.rules = List.of(rules);
    }

    /** A rule for {@code method} on paths matching {@code pathRegex}. */
    protected static Rule rule(String method, String pathRegex, Access access) {
        return new Rule(method, Pattern.compile(pathRegex), access);
    }

    @Override
    public final Access access(HttpServletRequest request) {
        String path = request.getRequestURI().substring(request.getContextPath().length());
        if (AccessPolicy.isPublicDocsOrHealth(path)) {
            return Access.anonymous();
        }
        String method = request.getMethod();
        for (Rule rule : rules) {
            if (rule.method().equals(method) && rule.path().matcher(path).matches()) {
                return rule.access();
            }
        }
        if (path.startsWith("/api/v1/") && ("GET".equals(method) || "HEAD".equals(method))) {
            return reads;
        }
        return fallback;
    }
}
