/*
 * weight-relay native data plane: the benchmark's yardsticks. Not part of the data plane's API
 * (dp.h): DataplaneBench measures the engine against these plain copies, in native code on the
 * same memory. Built into a library of its own (jnidataplanebench).
 */
#ifndef WEIGHT_RELAY_DP_BENCH_H_
#define WEIGHT_RELAY_DP_BENCH_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Both return DP_OK (0) or a negative DP_ERR_* code of dp.h (INVALID_ARGUMENT, IO, INTERNAL). */

/* Single-thread memcpy of length bytes, repeated (no warm-up); returns GB/s in *gbps_out. */
int dp_bench_memcpy(int64_t dst, int64_t src, int64_t length, int32_t repeats, double* gbps_out);
/* Plain loopback socket copy: streams connections, each sending its share of length
 * bytes from src in 4 MiB writes to a receiver reading into dst. One untimed warm-up round
 * on the fresh connections, then repeats timed rounds. GB/s in *gbps_out. */
int dp_bench_socket(int64_t dst, int64_t src, int64_t length, int32_t streams, int32_t repeats,
                    double* gbps_out);

#ifdef __cplusplus
}
#endif

#endif /* WEIGHT_RELAY_DP_BENCH_H_ */
