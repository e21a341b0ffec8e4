/**
 * REST controllers implementing the generated loader-service interfaces, and the service's problem
 * handler.
 */
package io.weightrelay.loader.web;
