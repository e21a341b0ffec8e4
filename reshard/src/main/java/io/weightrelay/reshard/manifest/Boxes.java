package io.weightrelay.reshard.manifest;

/** N-D box arithmetic on (offset, shape) pairs. */
public final class Boxes {
    private Boxes() {}

    public static boolean inside(Shape offset, Shape shape, Shape outer) {
        if (offset.rank() != outer.rank() || shape.rank() != outer.rank()) {
            return false;
        }
        for (int d = 0; d < outer.rank(); d++) {
            if (offset.dim(d) + shape.dim(d) > outer.dim(d)) {
                return false;
            }
        }
        return true;
    }

    public static boolean overlap(Shape offsetA, Shape shapeA, Shape offsetB, Shape shapeB) {
        for (int d = 0; d < offsetA.rank(); d++) {
            long lo = Math.max(offsetA.dim(d), offsetB.dim(d));
            long hi = Math.min(offsetA.dim(d) + shapeA.dim(d), offsetB.dim(d) + shapeB.dim(d));
            if (lo >= hi) {
                return false;
            }
        }
        return shapeA.numel() > 0 && shapeB.numel() > 0;
    }

    /** Row-major byte strides of a contiguous box of the given shape. */
    public static long[] contiguousStrides(Shape shape, int elementBytes) {
        long[] strides = new long[shape.rank()];
        long stride = elementBytes;
        for (int d = shape.rank() - 1; d >= 0; d--) {
            strides[d] = stride;
            stride = Math.multiplyExact(stride, shape.dim(d));
        }
        return strides;
    }
}
