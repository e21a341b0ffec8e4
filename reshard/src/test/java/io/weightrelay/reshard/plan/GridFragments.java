package io.weightrelay.reshard.plan;

import io.weightrelay.reshard.manifest.Shape;
import io.weightrelay.reshard.manifest.StoredFragment;
import io.weightrelay.reshard.manifest.TensorSpec;
import java.util.ArrayList;
import java.util.List;

/** A tensor stored as the cells of a grid, as the random scenarios and oracle cases cut one. */
final class GridFragments {

    private GridFragments() {}

    /**
     * One stored fragment per cell of {@code grid} (per dimension, the ascending cut points from 0
     * to the dimension's size), in row-major cell order, named {@code prefix@index}.
     */
    static List<StoredFragment> of(TensorSpec t, String prefix, long[][] grid) {
        int rank = grid.length;
        List<StoredFragment> out = new ArrayList<>();
        int[] at = new int[rank];
        while (true) {
            long[] lo = new long[rank];
            long[] ext = new long[rank];
            for (int d = 0; d < rank; d++) {
                lo[d] = grid[d][at[d]];
                ext[d] = grid[d][at[d] + 1] - lo[d];
            }
            Shape shape = Shape.of(ext);
            out.add(
                    new StoredFragment(
                            prefix + "@" + out.size(),
                            t.name(),
                            Shape.of(lo),
                            shape,
                            shape.numel() * t.rolloutDtype().bytes()));
            int d = rank - 1;
            while (d >= 0 && ++at[d] == grid[d].length - 1) {
                at[d] = 0;
                d--;
            }
            if (d < 0) {
                return out;
            }
        }
    }
}
