/**
 * What the loader needs from control-api, as one small port ({@link
 * io.weightrelay.loader.control.ControlPlane}) with domain types, and its implementation over the
 * generated control-api client.
 */
package io.weightrelay.loader.control;
