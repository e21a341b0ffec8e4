/** The publisher assignment: which trainer node publishes (and therefore stores) each tensor. */
package io.weightrelay.reshard.assign;
