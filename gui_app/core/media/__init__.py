"""Media: video decoding, frame caches and prefetch."""
