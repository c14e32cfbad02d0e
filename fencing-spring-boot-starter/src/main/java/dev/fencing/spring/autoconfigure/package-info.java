/**
 * The starter's auto-configuration classes. Each part backs off when the application defines the bean
 * itself and can be switched off by a property; name these classes in {@code spring.autoconfigure.exclude}
 * to drop a part altogether.
 */
package dev.fencing.spring.autoconfigure;
