/** loader-service: updates one rollout engine instance through prepare, apply and post-apply. */
package io.weightrelay.loader;
