/**
 * Implementation of fencing-jdbc: statement text, the writer, metrics. Not API: anything here may change
 * in any release without notice. Use the types in {@code dev.fencing.jdbc}.
 */
package dev.fencing.jdbc.internal;
