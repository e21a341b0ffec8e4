package io.weightrelay.reshard.manifest;

import java.util.Arrays;

/**
 * An N-D extent or coordinate (shape, offset). Immutable: the array is copied in and out.
 *
 * @param dims non-negative sizes, outermost first
 */
public record Shape(long[] dims) {
    public Shape {
        dims = dims.clone();
        for (long d : dims) {
            if (d < 0) {
                throw new IllegalArgumentException(
                        "negative dimension in " + Arrays.toString(dims));
            }
        }
    }

    public static Shape of(long... dims) {
        return new Shape(dims);
    }

    public static Shape zeros(int rank) {
        return new Shape(new long[rank]);
    }

    @Override
    public long[] dims() {
        return dims.clone();
    }

    public int rank() {
        return dims.length;
    }

    public long dim(int index) {
        return dims[index];
    }

    public long numel() {
        long n = 1;
        for (long d : dims) {
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    /** A copy with one dimension replaced. */
    public Shape with(int index, long value) {
        long[] copy = dims.clone();
        copy[index] = value;
        return new Shape(copy);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Shape s && Arrays.equals(dims, s.dims);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(dims);
    }

    @Override
    public String toString() {
        return Arrays.toString(dims);
    }
}
