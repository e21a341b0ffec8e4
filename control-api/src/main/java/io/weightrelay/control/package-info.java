/** control-api: generations, registry, cached routing plans and update sessions, kept in Redis. */
package io.weightrelay.control;
