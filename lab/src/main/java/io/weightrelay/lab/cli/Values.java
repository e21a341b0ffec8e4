package io.weightrelay.lab.cli;

import io.weightrelay.api.Dtypes;
import io.weightrelay.reshard.catalog.ModelCatalog;
import io.weightrelay.reshard.manifest.DType;
import io.weightrelay.reshard.placement.Mode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * The checks behind the flags: each converter refuses a bad value naming what is valid, and hands
 * the text on unchanged, since the command's own {@code main} parses it again.
 */
final class Values {

    private Values() {}

    /** A catalogued model ({@code ModelCatalog}). */
    static final class Model implements ITypeConverter<String>, Iterable<String> {
        @Override
        public String convert(String value) {
            if (!ModelCatalog.names().contains(value)) {
                throw new TypeConversionException(
                        "'" + value + "' is not a catalogued model; valid: " + join(this));
            }
            return value;
        }

        @Override
        public Iterator<String> iterator() {
            return ModelCatalog.names().stream().sorted().iterator();
        }
    }

    /** {@code compat} or {@code direct} (and the long names {@code Mode.parse} takes). */
    static final class RolloutMode implements ITypeConverter<String>, Iterable<String> {
        @Override
        public String convert(String value) {
            try {
                Mode.parse(value);
                return value;
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(
                        "'" + value + "' is not a mode; valid: " + join(this));
            }
        }

        @Override
        public Iterator<String> iterator() {
            return List.of("compat", "direct").iterator();
        }
    }

    /** One of a fixed list of words, exactly. */
    private abstract static class Exactly implements ITypeConverter<String>, Iterable<String> {
        private final String noun;
        private final List<String> valid;

        Exactly(String noun, String... valid) {
            this.noun = noun;
            this.valid = List.of(valid);
        }

        @Override
        public String convert(String value) {
            if (!valid.contains(value)) {
                throw new TypeConversionException(
                        "'" + value + "' is not " + noun + "; valid: " + join(this));
            }
            return value;
        }

        @Override
        public Iterator<String> iterator() {
            return valid.iterator();
        }
    }

    /** {@code compat} or {@code direct} exactly, as {@code bench control-plane} takes them. */
    static final class StrictMode extends Exactly {
        StrictMode() {
            super("a mode", "direct", "compat");
        }
    }

    /** The planner bench's rollout dtypes, {@code bf16} or {@code fp8} (block-scaled E4M3). */
    static final class RolloutDtype extends Exactly {
        RolloutDtype() {
            super("a rollout dtype", "bf16", "fp8");
        }
    }

    /** The demo's modes: one of them or {@code both}. */
    static final class DemoMode implements ITypeConverter<String>, Iterable<String> {
        @Override
        public String convert(String value) {
            if (value.equals("both")) {
                return value;
            }
            try {
                Mode.parse(value);
                return value;
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(
                        "'" + value + "' is not a mode; valid: " + join(this));
            }
        }

        @Override
        public Iterator<String> iterator() {
            return List.of("compat", "direct", "both").iterator();
        }
    }

    /** A dtype by its contract name ({@code bf16}, {@code fp32}, ...). */
    static final class Dtype implements ITypeConverter<String>, Iterable<String> {
        @Override
        public String convert(String value) {
            try {
                Dtypes.parse(value);
                return value;
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(
                        "'" + value + "' is not a dtype; valid: " + join(this));
            }
        }

        @Override
        public Iterator<String> iterator() {
            List<String> names = new ArrayList<>();
            for (DType t : DType.values()) {
                try {
                    names.add(Dtypes.apiName(t));
                } catch (IllegalArgumentException e) {
                    // a dtype the contracts do not name
                }
            }
            return names.iterator();
        }
    }

    /** Where {@code bench publish} stages a rank's bytes. */
    static final class StagingMode implements ITypeConverter<String>, Iterable<String> {
        @Override
        public String convert(String value) {
            if (!value.equals("segment") && !value.equals("file")) {
                throw new TypeConversionException(
                        "'" + value + "' is not a staging mode; valid: " + join(this));
            }
            return value;
        }

        @Override
        public Iterator<String> iterator() {
            return List.of("segment", "file").iterator();
        }
    }

    /** A count of at least 1. */
    static final class Positive implements ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            int n = integer(value);
            if (n < 1) {
                throw new TypeConversionException("'" + value + "' must be at least 1");
            }
            return n;
        }
    }

    /** A count of at least 0. */
    static final class NonNegative implements ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            int n = integer(value);
            if (n < 0) {
                throw new TypeConversionException("'" + value + "' must be at least 0");
            }
            return n;
        }
    }

    /** A byte count (or a number of seconds) of at least 1. */
    static final class PositiveLong implements ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            long n;
            try {
                n = Long.parseLong(value);
            } catch (NumberFormatException e) {
                throw new TypeConversionException("'" + value + "' is not a whole number");
            }
            if (n < 1) {
                throw new TypeConversionException("'" + value + "' must be at least 1");
            }
            return n;
        }
    }

    /** A rate above zero, such as {@code --nic-gbps}. */
    static final class PositiveNumber implements ITypeConverter<Double> {
        @Override
        public Double convert(String value) {
            double d;
            try {
                d = Double.parseDouble(value);
            } catch (NumberFormatException e) {
                throw new TypeConversionException("'" + value + "' is not a number");
            }
            if (!(d > 0) || Double.isInfinite(d)) {
                throw new TypeConversionException("'" + value + "' must be above 0");
            }
            return d;
        }
    }

    /** A TCP port. */
    static final class Port implements ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            int n = integer(value);
            if (n < 1 || n > 65535) {
                throw new TypeConversionException("'" + value + "' is not a port (1-65535)");
            }
            return n;
        }
    }

    private static int integer(String value) {
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new TypeConversionException("'" + value + "' is not a whole number");
        }
    }

    private static String join(Iterable<String> choices) {
        List<String> all = new ArrayList<>();
        choices.forEach(all::add);
        return String.join(", ", all);
    }
}
