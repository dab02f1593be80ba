"""Importers: results measured by other tools, stored with origin `imported` and their source."""
