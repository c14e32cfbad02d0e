/**
 * For authors of a watermark store: {@link dev.fencing.kafka.spi.WatermarkStore}, the partition state it
 * loads and the progress it commits, and the exception it throws when another member committed a partition.
 * An application picks one of the stores the toolkit ships ({@code PostgresWatermarkStore}, {@code
 * InMemoryWatermarkStore}) and needs nothing here.
 */
package dev.fencing.kafka.spi;
