/**
 * Implementation of fencing-redis: the Lua scripts, how they are sent, how their replies are read. Not
 * API: anything here may change in any release without notice. Use the types in {@code dev.fencing.redis}.
 */
package dev.fencing.redis.internal;
