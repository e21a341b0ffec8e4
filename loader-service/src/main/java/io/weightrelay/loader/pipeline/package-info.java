/**
 * The apply pipeline: the order this loader runs its slice of the routing plan in ({@link
 * io.weightrelay.loader.pipeline.SliceSchedule}), where every worker's buffers live ({@link
 * io.weightrelay.loader.pipeline.BufferDirectory}) and the executor that runs read -> redistribute
 * -> scatter in byte-bounded batches under a staging watermark.
 */
package io.weightrelay.loader.pipeline;
