/**
 * REST controllers implementing the generated control-api interfaces, and the service's problem
 * handler.
 */
package io.weightrelay.control.web;
