/** publisher-service: owns its node's store segment and stores one copy of each assigned tensor. */
package io.weightrelay.publisher;
