/**
 * This node's store segment and data plane: the publisher is the segment's only owner (trainer
 * ranks own none), stores objects from staging into it, and reports its use and transport counters.
 */
package io.weightrelay.publisher.segment;
