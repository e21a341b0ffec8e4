/**
 * What every weight-relay service shares: RFC 9457 problem responses with stable types, and the
 * role-token access check. Services keep their own handler and policy; this package only holds the
 * parts that would otherwise be written three times.
 */
package io.weightrelay.service;
