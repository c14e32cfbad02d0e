/**
 * Code the toolkit's modules share. Not API: it may change in any release.
 */
package dev.fencing.internal;
