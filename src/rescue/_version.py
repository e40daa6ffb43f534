"""The package version, in a leaf module so that any layer can record it without importing the notebook API."""

__version__ = "0.1.0"
