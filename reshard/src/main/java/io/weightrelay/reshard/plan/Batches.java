package io.weightrelay.reshard.plan;

/**
 * Each reader's reads packed in plan order into batches of at most {@code batchBytes} of staging: a
 * read's batch and its offset in the reader's staging of that batch, and the number of batches (of
 * the busiest reader).
 */
record Batches(int[] batch, long[] staging, int count) {

    static Batches pack(int[] reader, LongList readSpan, int workers, long batchBytes) {
        int[] batch = new int[reader.length];
        long[] staging = new long[reader.length];
        long[] fill = new long[workers];
        int[] current = new int[workers];
        int count = 0;
        for (int i = 0; i < reader.length; i++) {
            int w = reader[i];
            long span = readSpan.get(i);
            if (fill[w] > 0 && fill[w] + span > batchBytes) {
                current[w]++;
                fill[w] = 0;
            }
            batch[i] = current[w];
            staging[i] = fill[w];
            fill[w] += span;
            count = Math.max(count, current[w] + 1);
        }
        return new Batches(batch, staging, count);
    }
}
