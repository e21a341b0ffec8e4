package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.codec.ByteSink;
import io.weightrelay.reshard.codec.ByteSource;

/** Column codecs: a count, then every value as a varint (or string, or raw double bits). */
final class Columns {
    private Columns() {}

    static void strings(ByteSink out, String[] values) {
        out.varInt(values.length);
        for (String v : values) {
            out.string(v);
        }
    }

    static String[] strings(ByteSource in) {
        String[] values = new String[in.count()];
        for (int i = 0; i < values.length; i++) {
            values[i] = in.string();
        }
        return values;
    }

    static void ints(ByteSink out, int[] values) {
        out.varInt(values.length);
        for (int v : values) {
            out.varInt(v);
        }
    }

    static int[] ints(ByteSource in) {
        int[] values = new int[in.count()];
        for (int i = 0; i < values.length; i++) {
            values[i] = in.varInt();
        }
        return values;
    }

    static void longs(ByteSink out, long[] values) {
        out.varInt(values.length);
        for (long v : values) {
            out.varLong(v);
        }
    }

    static long[] longs(ByteSource in) {
        long[] values = new long[in.count()];
        for (int i = 0; i < values.length; i++) {
            values[i] = in.varLong();
        }
        return values;
    }

    static void bytes(ByteSink out, byte[] values) {
        out.varInt(values.length);
        for (byte v : values) {
            out.u8(v);
        }
    }

    static byte[] bytes(ByteSource in) {
        byte[] values = new byte[in.count()];
        for (int i = 0; i < values.length; i++) {
            values[i] = (byte) in.u8();
        }
        return values;
    }

    static void doubles(ByteSink out, double[] values) {
        out.varInt(values.length);
        for (double v : values) {
            out.fixedLong(Double.doubleToLongBits(v));
        }
    }

    static double[] doubles(ByteSource in) {
        double[] values = new double[in.count()];
        for (int i = 0; i < values.length; i++) {
            values[i] = Double.longBitsToDouble(in.fixedLong());
        }
        return values;
    }
}
