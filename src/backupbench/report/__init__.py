"""Rendering stored results: terminal tables and machine-readable output."""
