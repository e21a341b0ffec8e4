package io.weightrelay.publisher.web;

import io.weightrelay.service.problem.ProblemHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** This service's one exception handler: every error leaves as problem+json. */
@RestControllerAdvice
class RestProblemHandler extends ProblemHandler {}
