"""Ingest: benchmark output files and published references into the store."""
