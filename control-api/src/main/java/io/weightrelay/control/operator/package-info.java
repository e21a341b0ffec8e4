/**
 * Read-only summaries for operators: the console at {@code /console} (static files under {@code
 * static/console/}) and dashboards. Each answer is sized by models, segments, loaders or NICs,
 * never by tensors: no manifest or plan leaves control-api through here.
 */
package io.weightrelay.control.operator;
