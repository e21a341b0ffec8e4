/**
 * The apply pipeline: this loader's view of the routing plan ({@link
 * io.weightrelay.loader.pipeline.LoaderSlice}), where every worker's buffers live ({@link
 * io.weightrelay.loader.pipeline.BufferDirectory}) and the executor that runs read -> redistribute
 * -> scatter in byte-bounded batches under a staging watermark.
 */
package io.weightrelay.loader.pipeline;
