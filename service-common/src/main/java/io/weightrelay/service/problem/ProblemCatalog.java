package io.weightrelay.service.problem;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.springframework.http.HttpStatus;

/**
 * The status and title of every problem type the services answer with, read once from {@code
 * problem-kinds.tsv} beside this class: one row per slug ({@code slug status title}, blank lines
 * and {@code #} comments skipped), so a slug has one status and one title in every service. The
 * services' {@link ProblemKind.Catalogued} enums name the kinds they raise; a constant without a
 * row fails its first use, and the service's start ({@link ProblemAutoConfiguration}).
 */
public final class ProblemCatalog {

    static final String RESOURCE = "problem-kinds.tsv";

    private static final Map<String, ProblemKind> KINDS = load();

    private ProblemCatalog() {}

    /** Every kind of the table, by slug, in table order. */
    public static Map<String, ProblemKind> kinds() {
        return KINDS;
    }

    /** The row of {@code slug}. */
    public static ProblemKind kind(String slug) {
        ProblemKind kind = KINDS.get(slug);
        if (kind == null) {
            throw new IllegalStateException(
                    "problem type " + slug + " has no row in " + RESOURCE + " of service-common");
        }
        return kind;
    }

    /** {@code generation-not-found} for the constant {@code GENERATION_NOT_FOUND}. */
    static String slugOf(String constant) {
        return constant.toLowerCase(Locale.ROOT).replace('_', '-');
    }

    private static Map<String, ProblemKind> load() {
        Map<String, ProblemKind> kinds = new LinkedHashMap<>();
        try (InputStream in = ProblemCatalog.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException(RESOURCE + " is missing from service-common");
            }
            BufferedReader lines =
                    new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                String row = line.strip();
                if (row.isEmpty() || row.startsWith("#")) {
                    continue;
                }
                String[] cells = row.split("\\s+", 3);
                if (cells.length < 3) {
                    throw new IllegalStateException(RESOURCE + ": not 'slug status title': " + row);
                }
                ProblemKind kind =
                        ProblemKind.of(
                                cells[0], HttpStatus.valueOf(Integer.parseInt(cells[1])), cells[2]);
                if (kinds.putIfAbsent(kind.slug(), kind) != null) {
                    throw new IllegalStateException(RESOURCE + ": " + kind.slug() + " twice");
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return Collections.unmodifiableMap(kinds);
    }
}
