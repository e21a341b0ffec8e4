/** How a service's life is tied to what started it. */
package io.weightrelay.service.lifecycle;
