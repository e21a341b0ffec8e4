package io.weightrelay.control;

import java.util.regex.Pattern;

/**
 * Reads the refusal tables under {@code src/test/resources/refusals/}: one request a line, {@code
 * method | path | role | body | status | problem type}, the body quoted in backticks. In a path or
 * body, {@code {M}} is the test's model, {@code {tensors*N}} a manifest of N one-element tensors
 * and {@code {c*N}} the text c N times.
 */
public final class Refusals {

    /** What quotes a cell of a table (bodies are JSON, full of double quotes). */
    public static final char QUOTE = '`';

    private static final Pattern TENSORS = Pattern.compile("\\{tensors\\*(\\d+)}");
    private static final Pattern REPEAT = Pattern.compile("\\{([^{}*]+)\\*(\\d+)}");
    private static final String TENSOR =
            "{\"name\":\"t%d\",\"shape\":[1],\"trainerDtype\":\"fp32\",\"rolloutDtype\":\"bf16\"}";

    private Refusals() {}

    /** The token of a role named in a table; none for an empty cell. */
    public static String token(String role) {
        if (role == null) {
            return null;
        }
        return switch (role) {
            case "trainer" -> ControlApiClientSupport.TRAINER;
            case "loader" -> ControlApiClientSupport.LOADER;
            case "operator" -> ControlApiClientSupport.OPERATOR;
            default -> throw new IllegalArgumentException("no role " + role);
        };
    }

    /** A path or body of a table with its placeholders filled in. */
    public static String expand(String text, String model) {
        if (text == null) {
            return null;
        }
        // no replacement holds a '$' or '\\', so none needs quoting
        String out = TENSORS.matcher(text).replaceAll(m -> manifest(Integer.parseInt(m.group(1))));
        out = REPEAT.matcher(out).replaceAll(m -> m.group(1).repeat(Integer.parseInt(m.group(2))));
        return out.replace("{M}", model);
    }

    private static String manifest(int tensors) {
        StringBuilder out = new StringBuilder("{\"model\":\"{M}\",\"maxFragmentBytes\":4096,");
        out.append("\"tensors\":[");
        for (int i = 0; i < tensors; i++) {
            out.append(i == 0 ? "" : ",").append(TENSOR.formatted(i));
        }
        return out.append("]}").toString();
    }
}
