/**
 * The engine instance this loader serves: its workers, modes and receive buffers as the engine
 * registered them, its registration epoch, the generation it holds and whether it is paused for a
 * rebuild; and the data plane the loader opens with the instance's node label.
 */
package io.weightrelay.loader.instance;
