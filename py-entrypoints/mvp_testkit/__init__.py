"""Helpers that end-to-end tests run inside Ray (never used by mvp itself)."""
