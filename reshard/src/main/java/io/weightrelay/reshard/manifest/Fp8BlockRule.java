package io.weightrelay.reshard.manifest;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Which tensors of a manifest become block-scaled FP8 ({@link BlockScales}): those whose name
 * matches an {@code include} pattern and no {@code exclude} pattern. Patterns are globs over the
 * whole name: {@code *} any run of characters (dots too), {@code ?} one character. The defaults
 * select the linear projections and the experts and keep embeddings, norms, router gates and {@code
 * lm_head} in their rollout dtype, as DeepSeek-V3 and Kimi-K2 FP8 checkpoints do.
 *
 * @param include patterns of the tensors to quantise
 * @param exclude patterns of the tensors to keep, even when included
 */
public record Fp8BlockRule(List<String> include, List<String> exclude) {

    /** The scheme's name in the contracts. */
    public static final String SCHEME = "fp8-e4m3-block128";

    public static final List<String> DEFAULT_INCLUDE =
            List.of("*_proj.weight", "*_proj_with_mqa.weight", "*.experts.*.weight");

    public static final List<String> DEFAULT_EXCLUDE =
            List.of("*embed*", "*norm*", "lm_head*", "*.gate.weight", "*router*");

    private static final Pattern GLOB = Pattern.compile("[A-Za-z0-9_.*?\\-]{1,256}");

    /** A tensor or pattern the rule cannot take. */
    public static final class RuleException extends IllegalArgumentException {
        private final String tensor;
        private final String pattern;

        RuleException(String message, String tensor, String pattern) {
            super(message);
            this.tensor = tensor;
            this.pattern = pattern;
        }

        /** The tensor at fault, or null. */
        public String tensor() {
            return tensor;
        }

        /** The pattern at fault (or that selected the tensor), or null. */
        public String pattern() {
            return pattern;
        }
    }

    public Fp8BlockRule {
        include = List.copyOf(include);
        exclude = List.copyOf(exclude);
        for (String p : include) {
            checkPattern(p);
        }
        for (String p : exclude) {
            checkPattern(p);
        }
    }

    /** The default rule. */
    public static Fp8BlockRule defaults() {
        return new Fp8BlockRule(DEFAULT_INCLUDE, DEFAULT_EXCLUDE);
    }

    /** A rule with the defaults for what is null. */
    public static Fp8BlockRule of(List<String> include, List<String> exclude) {
        return new Fp8BlockRule(
                include == null ? DEFAULT_INCLUDE : include,
                exclude == null ? DEFAULT_EXCLUDE : exclude);
    }

    private static void checkPattern(String p) {
        Objects.requireNonNull(p, "pattern");
        if (!GLOB.matcher(p).matches()) {
            throw new RuleException(
                    "pattern '"
                            + p
                            + "' is not a glob of 1 to 256 characters from [A-Za-z0-9_.*?-]",
                    null,
                    p);
        }
    }

    /** The include pattern that selects {@code name}, or null when none does or one excludes it. */
    public String selectedBy(String name) {
        return selectedBy(name, compile(include), compile(exclude));
    }

    private String selectedBy(String name, List<Pattern> included, List<Pattern> excluded) {
        for (Pattern p : excluded) {
            if (p.matcher(name).matches()) {
                return null;
            }
        }
        for (int i = 0; i < included.size(); i++) {
            if (included.get(i).matcher(name).matches()) {
                return include.get(i);
            }
        }
        return null;
    }

    private static List<Pattern> compile(List<String> globs) {
        List<Pattern> out = new ArrayList<>(globs.size());
        for (String g : globs) {
            out.add(Pattern.compile(regex(g)));
        }
        return out;
    }

    /**
     * The manifest's tensors with the rule applied: each selected tensor gets rollout dtype {@link
     * DType#F8_E4M3} and is followed by its scale tensor; the others are unchanged, and so are
     * tensors already block-quantised with their scale tensor present (applying twice changes
     * nothing).
     *
     * @throws RuleException when a selected tensor is not 2-D, its trainer dtype is not fp32, bf16
     *     or fp16, or its scale tensor's name is taken
     */
    public List<TensorSpec> apply(List<TensorSpec> tensors) {
        Set<String> names = new HashSet<>(tensors.size() * 2);
        for (TensorSpec t : tensors) {
            names.add(t.name());
        }
        // Tensors already in the convention (a manifest the rule was applied to) stay as they are.
        Set<String> done = new HashSet<>();
        for (TensorSpec t : tensors) {
            if (BlockScales.quantized(t) && names.contains(BlockScales.scaleName(t.name()))) {
                done.add(t.name());
                done.add(BlockScales.scaleName(t.name()));
            }
        }
        List<Pattern> included = compile(include);
        List<Pattern> excluded = compile(exclude);
        List<TensorSpec> out = new ArrayList<>(tensors.size() + tensors.size() / 2);
        for (TensorSpec t : tensors) {
            String by = done.contains(t.name()) ? null : selectedBy(t.name(), included, excluded);
            if (by == null) {
                out.add(t);
                continue;
            }
            if (t.shape().rank() != 2) {
                throw selected(
                        t,
                        by,
                        "has shape "
                                + t.shape()
                                + "; only 2-D tensors have 128x128 block scales (exclude it)");
            }
            TensorSpec weight =
                    new TensorSpec(t.name(), t.shape(), t.trainerDtype(), DType.F8_E4M3);
            if (!BlockScales.quantized(weight)) {
                throw selected(
                        t,
                        by,
                        "the trainer holds it as "
                                + t.trainerDtype()
                                + "; block FP8 converts F32, BF16 or F16");
            }
            TensorSpec scale = BlockScales.scaleOf(weight);
            if (names.contains(scale.name())) {
                throw selected(
                        t,
                        by,
                        "its scale tensor's name "
                                + scale.name()
                                + " is already a tensor of the manifest");
            }
            out.add(weight);
            out.add(scale);
        }
        return out;
    }

    /** "tensor T is selected for block FP8 by pattern 'P' but {@code problem}". */
    private static RuleException selected(TensorSpec t, String pattern, String problem) {
        return new RuleException(
                "tensor "
                        + t.name()
                        + " is selected for "
                        + SCHEME
                        + " by pattern '"
                        + pattern
                        + "' but "
                        + problem,
                t.name(),
                pattern);
    }

    private static String regex(String glob) {
        StringBuilder re = new StringBuilder(glob.length() + 8);
        for (char c : glob.toCharArray()) {
            switch (c) {
                case '*' -> re.append(".*");
                case '?' -> re.append('.');
                default -> re.append(Pattern.quote(String.valueOf(c)));
            }
        }
        return re.toString();
    }
}
