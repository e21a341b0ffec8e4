/** The data plane benchmark ({@code ./relay bench dataplane}). */
package io.weightrelay.dataplane.bench;
