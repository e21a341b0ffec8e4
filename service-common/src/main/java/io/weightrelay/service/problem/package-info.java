/**
 * Errors as {@code application/problem+json} (RFC 9457). A {@link
 * io.weightrelay.service.problem.ProblemKind} names one kind of error with a stable {@code type}
 * URI; domain exceptions are {@link io.weightrelay.service.problem.RelayException}s of a kind;
 * {@link io.weightrelay.service.problem.ProblemHandler} is the base of each service's single
 * exception handler.
 */
package io.weightrelay.service.problem;
