/**
 * Web concerns shared by every feature: the service's one problem handler and request limits.
 * Controllers live in their feature packages.
 */
package io.weightrelay.control.web;
