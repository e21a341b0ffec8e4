/**
 * A plan's traffic: the bytes each rollout NIC takes in and sends out and each trainer node sends,
 * and how evenly they spread. The time model built on it ({@code ClusterModel}) is the lab's.
 */
package io.weightrelay.reshard.timing;
