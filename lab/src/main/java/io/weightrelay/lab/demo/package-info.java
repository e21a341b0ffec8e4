/** {@code ./relay demo}: the whole weight-relay story on one machine, narrated. */
package io.weightrelay.lab.demo;
