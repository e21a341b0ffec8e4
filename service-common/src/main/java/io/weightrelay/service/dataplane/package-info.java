/**
 * The one data-plane configuration of every service: {@code relay.dataplane.*} ({@link
 * io.weightrelay.service.dataplane.DataplaneProperties}) and the one factory that checks it at
 * start-up and turns it into the native engine's {@code DataplaneConfig} and into the URLs a
 * service advertises ({@link io.weightrelay.service.dataplane.DataplaneSettings}).
 */
package io.weightrelay.service.dataplane;
