/**
 * control-api's access policy for the shared role-token filter: operators read, trainers publish,
 * loaders update; health, the OpenAPI document, Swagger UI and the console's static page are open.
 */
package io.weightrelay.control.security;
