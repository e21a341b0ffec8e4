package io.weightrelay.service.security;

import jakarta.servlet.http.HttpServletRequest;
import java.util.List;
import java.util.regex.Pattern;

/**
 * An {@link AccessPolicy} written as a table: health, the API docs and the service's public static
 * pages (if it names any) are anonymous, the first rule whose method and path match decides, other
 * reads under {@code /api/v1/} need {@code reads}, and anything else needs {@code fallback}.
 * Services subclass it with their table; immutable and thread safe.
 */
public class AccessRules implements AccessPolicy {

    /**
     * A method and a path pattern (a regular expression over the whole path), and who may. With a
     * {@code subjectKind}, the pattern's group {@code id} is the identity the request is about.
     */
    public record Rule(String method, Pattern path, Access access, String subjectKind) {}

    /** One path segment, in a rule's pattern. */
    protected static final String SEG = "[^/]+";

    /** The path of one generation of a model, in a rule's pattern. */
    protected static final String GEN = "/api/v1/models/" + SEG + "/generations/" + SEG;

    private final Access reads;
    private final Access fallback;
    private final List<String> publicPaths;
    private final List<Rule> rules;

    protected AccessRules(Access reads, Access fallback, Rule... rules) {
        this(reads, fallback, List.of(), rules);
    }

    /**
     * With {@code publicPaths} anonymous too, for static pages that hold no secret: a path ending
     * in {@code /} opens everything under it, any other only itself. A request path with a dot
     * segment, an encoded character or a path parameter is never public here, so no path that the
     * container would resolve elsewhere is opened by its prefix.
     */
    protected AccessRules(Access reads, Access fallback, List<String> publicPaths, Rule... rules) {
        this.reads = reads;
        this.fallback = fallback;
        this.publicPaths = List.copyOf(publicPaths);
        this.rules = List.of(rules);
    }

    /** A rule for {@code method} on paths matching {@code pathRegex}. */
    protected static Rule rule(String method, String pathRegex, Access access) {
        return new Rule(method, Pattern.compile(pathRegex), access, null);
    }

    /**
     * A rule whose request is about one identity of kind {@code subjectKind} (the path segment
     * matched by the group {@code (?<id>...)} of {@code pathRegex}): tokens bound to another
     * identity are refused.
     */
    protected static Rule rule(String method, String pathRegex, Access access, String subjectKind) {
        return new Rule(method, Pattern.compile(pathRegex), access, subjectKind);
    }

    private boolean isPublicPage(String path) {
        if (path.contains("/.")
                || path.contains("%")
                || path.contains(";")
                || path.contains("\\")) {
            return false;
        }
        for (String p : publicPaths) {
            if (p.endsWith("/") ? path.startsWith(p) : path.equals(p)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public final Access access(HttpServletRequest request) {
        String path = request.getRequestURI().substring(request.getContextPath().length());
        if (AccessPolicy.isPublicDocsOrHealth(path) || isPublicPage(path)) {
            return Access.anonymous();
        }
        if (AccessPolicy.isMetrics(path)) {
            return AccessPolicy.METRICS_ACCESS;
        }
        String method = request.getMethod();
        for (Rule rule : rules) {
            java.util.regex.Matcher matcher = rule.path().matcher(path);
            if (rule.method().equals(method) && matcher.matches()) {
                return rule.subjectKind() == null
                        ? rule.access()
                        : rule.access().about(rule.subjectKind(), matcher.group("id"));
            }
        }
        if (path.startsWith("/api/v1/") && ("GET".equals(method) || "HEAD".equals(method))) {
            return reads;
        }
        return fallback;
    }
}
