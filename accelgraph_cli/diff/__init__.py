"""Structural diff of two GraphModels: nodes matched by what they do and where they sit."""
