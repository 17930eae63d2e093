"""Annotation: taxonomy, agreement, queues, export and import, teaching."""
