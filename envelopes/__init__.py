"""The iLang text layer: parse, validate and render; provenance; isolation.

This package depends on no other package of the project.
"""
