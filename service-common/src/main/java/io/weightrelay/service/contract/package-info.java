/**
 * The hand-written OpenAPI contracts, served by every service to its Swagger UI at {@code
 * /openapi/<name>.yaml}.
 */
package io.weightrelay.service.contract;
