/**
 * Role-token access control shared by every service: bearer tokens per {@link
 * io.weightrelay.service.security.Role} from configuration, compared in constant time, and a
 * servlet filter that answers 401/403 as problem+json. Each service supplies its own {@link
 * io.weightrelay.service.security.AccessPolicy}; declaring that bean switches the filter on.
 */
package io.weightrelay.service.security;
