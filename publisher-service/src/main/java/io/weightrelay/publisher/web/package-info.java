/**
 * REST controllers implementing the generated publisher-service interfaces, and the service's
 * problem handler.
 */
package io.weightrelay.publisher.web;
