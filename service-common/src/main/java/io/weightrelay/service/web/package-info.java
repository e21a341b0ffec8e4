/**
 * What every service's web layer shares: request-body limits and problem+json for the errors the
 * servlet container raises before Spring sees the request.
 */
package io.weightrelay.service.web;
